package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// TestJoinedEvenWithAnEmptyAssignment: Joined turns true once the group
// has assigned the consumer its partitions, also for a member beyond the
// partition count that gets none, and false again after Stop.
func TestJoinedEvenWithAnEmptyAssignment(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	firstOwned := NewOwnership()
	first := e.start(e.config(), newMemStore(), nil, firstOwned)
	require.Eventually(t, first.Joined, 10*time.Second, 5*time.Millisecond)

	cfg := e.config()
	cfg.Registerer = prometheus.NewRegistry()
	spareOwned := NewOwnership()
	spare, err := New(cfg, newMemStore(), spareOwned)
	require.NoError(t, err)
	require.False(t, spare.Joined(), "not before Start")
	require.NoError(t, spare.Start(t.Context()))
	require.Eventually(t, spare.Joined, 10*time.Second, 5*time.Millisecond)
	require.Empty(t, spareOwned.Partitions(), "one partition, kept by the first member")
	require.Equal(t, []int32{0}, firstOwned.Partitions())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, spare.Stop(ctx))
	require.False(t, spare.Joined(), "not after Stop")
}
