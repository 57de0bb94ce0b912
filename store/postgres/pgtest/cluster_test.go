package pgtest

import (
	"context"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Cluster starts a server that accepts connections, and Restart (an
// immediate stop, then a start) leaves it accepting them again with its
// data.
func TestClusterRestart(t *testing.T) {
	t.Parallel()
	s := Cluster(t)
	exec := func(sql string) {
		conn, err := pgx.Connect(t.Context(), s.DSN())
		require.NoError(t, err)
		defer conn.Close(context.Background())
		_, err = conn.Exec(t.Context(), sql)
		require.NoError(t, err)
	}
	exec("CREATE TABLE kept (x int); INSERT INTO kept VALUES (1)")
	s.Restart(t)
	exec("SELECT 1/x FROM kept")
	s.Stop(t)
	_, err := pgx.Connect(t.Context(), s.DSN())
	require.Error(t, err, "stopped")
	s.Start(t)
	exec("SELECT 1/x FROM kept")
}

// A synchronous Standby has every commit of its primary, and after the
// primary crashes and the standby is promoted, a client on FailoverDSN
// reads them there and writes on.
func TestStandbyPromote(t *testing.T) {
	t.Parallel()
	primary := Cluster(t)
	standby := primary.Standby(t, true)
	exec := func(dsn, sql string) {
		conn, err := pgx.Connect(t.Context(), dsn)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		_, err = conn.Exec(t.Context(), sql)
		require.NoError(t, err)
	}
	dsn := FailoverDSN(primary, standby)
	exec(dsn, "CREATE TABLE kept (x int)")
	for range 50 {
		exec(dsn, "INSERT INTO kept VALUES (1)")
	}
	primary.Stop(t) // a crash: nothing more reaches the standby
	standby.Promote(t)
	conn, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.Equal(t, uint16(standby.Port), conn.PgConn().Conn().RemoteAddr().(*net.TCPAddr).AddrPort().Port())
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT count(*) FROM kept").Scan(&n))
	require.Equal(t, 50, n, "every synchronous commit is on the promoted standby")
	_, err = conn.Exec(t.Context(), "INSERT INTO kept VALUES (2)")
	require.NoError(t, err, "the promoted standby takes writes")
}
