package pgtest

import (
	"context"
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
