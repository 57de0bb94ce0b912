package center

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/store/sharded"
	"github.com/eventcenter/eventcenter/store/storetest"
)

// rowsOn counts the messages in one shard's database.
func rowsOn(t *testing.T, dsn string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT count(*) FROM eventcenter_messages").Scan(&n))
	return n
}

// store.driver sharded opens one migrated PostgreSQL store per shard and
// spreads the messages over them by bucket; Migrate migrates every shard;
// a shard that cannot be reached fails the start naming it.
func TestOpenStoreSharded(t *testing.T) {
	t.Parallel()
	a, b := pgtest.Cluster(t), pgtest.Cluster(t)
	cfg := config.Default().Store
	cfg.Driver, cfg.MaxConns = "sharded", 4
	cfg.Shards = []config.StoreShard{{DSN: a.DSN(), Buckets: "0-511"}, {DSN: b.DSN(), Buckets: "512-1023"}}

	_, _, err := OpenStore(t.Context(), cfg, time.Now, quiet())
	require.ErrorContains(t, err, "store.shards[0]", "not migrated and no auto_migrate")
	require.NoError(t, Migrate(t.Context(), cfg, quiet()))

	st, pool, err := OpenStore(t.Context(), cfg, time.Now, quiet())
	require.NoError(t, err)
	require.Nil(t, pool, "the sharded store owns its pools")
	require.IsType(t, &sharded.Store{}, st)
	keys := storetest.Keys("k", 200)
	var changes []store.Change
	for _, k := range keys {
		changes = append(changes, storetest.Prepare("shop", k, 0, time.Now()))
	}
	_, err = st.Apply(t.Context(), store.ApplyRequest{Changes: changes})
	require.NoError(t, err)
	onA, onB := rowsOn(t, a.DSN()), rowsOn(t, b.DSN())
	require.Equal(t, 200, onA+onB)
	require.Positive(t, onA)
	require.Positive(t, onB)
	m := st.(*sharded.Store).Map()
	wantA := 0
	for _, k := range keys {
		if m.Shard("shop", k) == 0 {
			wantA++
		}
	}
	require.Equal(t, wantA, onA, "each key on its bucket's shard")
	require.NoError(t, st.Close())

	// A shard nobody listens on: the error names it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	cfg.Shards[1].DSN = "postgres://postgres@127.0.0.1:" + strconv.Itoa(port) + "/postgres?sslmode=disable&connect_timeout=2"
	_, _, err = OpenStore(t.Context(), cfg, time.Now, quiet())
	require.ErrorContains(t, err, "store.shards[1]")
}
