package sharded_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/memstore"
	"github.com/eventcenter/eventcenter/store/sharded"
	"github.com/eventcenter/eventcenter/store/storetest"
)

// memShards returns a sharded store over n in-memory stores.
func memShards(t *testing.T, now func() time.Time, n int) *sharded.Store {
	t.Helper()
	var shards []sharded.Shard
	for i, b := range sharded.Even(n) {
		_ = i
		shards = append(shards, sharded.Shard{Store: memstore.New(now), Buckets: b})
	}
	s, err := sharded.New(shards)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// The sharded store over in-memory shards passes the conformance suite
// (2 and 3 shards).
func TestConformanceMem(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 3} {
		t.Run(string(rune('0'+n))+"shards", func(t *testing.T) {
			t.Parallel()
			storetest.Exercise(t, func(t *testing.T, now func() time.Time) store.Store { return memShards(t, now, n) })
		})
	}
}
