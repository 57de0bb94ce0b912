package e2e

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

// TestShardRestartMidStream runs the center on a store sharded over two
// PostgreSQL clusters and crashes one of them (pg_ctl -m immediate) and
// starts it again while messages flow: every committed message is
// forwarded, no rolled-back one is, and both shards hold messages.
func TestShardRestartMidStream(t *testing.T) {
	t.Parallel()
	a, b := pgtest.Cluster(t), pgtest.Cluster(t)
	e := newEnv(t, "sqlite", func(cfg *config.Config) {
		cfg.Store = config.Store{Driver: "sharded", MaxConns: 8, AutoMigrate: true, Shards: []config.StoreShard{
			{DSN: a.DSN(), Buckets: "0-511"}, {DSN: b.DSN(), Buckets: "512-1023"}}}
	})
	col := e.collect(businessTopic)
	e.startCenter(center.Options{})
	var pl plan
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		pl = produceMix(t, e, "shard", 3000, 4)
	}()
	require.Eventually(t, func() bool { ids, _ := col.count(); return ids >= 300 }, time.Minute, 5*time.Millisecond)
	b.Restart(t)
	ids, _ := col.count()
	t.Logf("restarted shard 1 after %d messages were forwarded", ids)
	<-produced
	col.waitFor(t, pl.committed, 2*time.Minute)
	checkForwarded(t, col, pl)
	for i, srv := range []*pgtest.Server{a, b} {
		conn, err := pgx.Connect(t.Context(), srv.DSN())
		require.NoError(t, err)
		var n int
		require.NoError(t, conn.QueryRow(t.Context(), "SELECT count(*) FROM eventcenter_messages").Scan(&n))
		require.NoError(t, conn.Close(t.Context()))
		require.Positive(t, n, "shard %d holds messages", i)
		t.Logf("shard %d: %d messages", i, n)
	}
}
