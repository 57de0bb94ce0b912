package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// The transport-at-rate baseline sends at the rate through clientlib
// producers and reads every COMMIT back; the center's added latency is
// the center path's p50/p99 minus the baseline's.
func TestRateBaseline(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	require.NoError(t, err)
	defer cluster.Close()
	cfg := Default()
	cfg.Rate, cfg.Producers, cfg.Concurrency, cfg.Partitions = 400, 1, 16, 2
	b, err := rateBaseline(t.Context(), cfg, cluster.ListenAddrs(), "bench.atrate.test", time.Second)
	require.NoError(t, err)
	// Paced: never more than a second at 400 msg/s allows (a loaded
	// machine, or -race, may send fewer).
	require.Positive(t, b.Messages)
	require.LessOrEqual(t, b.Messages, int64(401+cfg.Producers*cfg.Concurrency), "a second at 400 msg/s")
	require.EqualValues(t, b.Messages, b.CommitToRead.Count, "every COMMIT read back once")
	require.Positive(t, b.CommitToRead.P50Ms)
	require.LessOrEqual(t, b.CommitToRead.P50Ms, b.CommitToRead.P99Ms)

	rep := &Report{RateBaseline: b}
	rep.Center.CommitToForward = Latency{Count: 10, P50Ms: b.CommitToRead.P50Ms + 3, P99Ms: b.CommitToRead.P99Ms + 7}
	rep.finish()
	require.InDelta(t, 3, b.AddedP50Ms, 1e-9)
	require.InDelta(t, 7, b.AddedP99Ms, 1e-9)
}
