package bench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

// --store sharded runs the center on a store over two PostgreSQL clusters
// (started here) and forwards everything.
func TestRunSharded(t *testing.T) {
	t.Parallel()
	a, b := pgtest.Cluster(t), pgtest.Cluster(t)
	cfg := Default()
	cfg.Store, cfg.DSN = "sharded", a.DSN()+","+b.DSN()
	cfg.Messages = 200
	cfg.Concurrency = 8
	cfg.CheckbackRatio = 0.2
	cfg.Partitions = 2
	rep, err := Run(t.Context(), cfg)
	require.NoError(t, err)
	require.Zero(t, rep.Center.Errors, rep.Center.FirstError)
	require.EqualValues(t, 200, rep.Center.Forwarded)
	require.Zero(t, rep.Center.Missing)
	require.NotNil(t, rep.Store, "the baseline of the first shard")
}
