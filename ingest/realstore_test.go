package ingest

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/store/sqlite"
)

func TestWithSQLiteStore(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ec.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	exerciseRealStore(t, st)
}

func TestWithPostgresStore(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(t.Context(), pool))
	st, err := postgres.New(pool, postgres.Options{})
	require.NoError(t, err)
	exerciseRealStore(t, st)
}

// exerciseRealStore is the key ingest scenario on a real store: a PREPARE
// and COMMIT in one batch become one sendable message, a COMMIT before its
// PREPARE works, many keys over several partitions apply, and a second
// ingester of the group that replays everything (the first could not commit
// offsets) changes nothing and hands nothing over again.
func exerciseRealStore(t *testing.T, st store.Store) {
	e := newEnv(t, 4)
	fwd := &handoffs{}

	// In the partitions before the first poll: one batch each.
	e.produce(prepareRec("shop", "one-batch", []byte("p")), decisionRec("shop", "one-batch", "commit"))
	e.produce(decisionRec("shop", "late", "commit"))

	var failCommits atomic.Bool
	failCommits.Store(true)
	e.cluster.ControlKey(kmsgOffsetCommitKey.Int16(), func(kreq kmsgRequest) (kmsgResponse, error, bool) {
		if !failCommits.Load() {
			e.cluster.DropControl()
			return nil, nil, false
		}
		e.cluster.KeepControl()
		return failOffsetCommit(kreq), nil, true
	})
	first := e.start(e.config(), st, fwd, NewOwnership())

	committed := func(key string, body bool) func() bool {
		return func() bool {
			m, err := st.Get(t.Context(), "shop", key)
			return err == nil && m.Status == state.Committed && m.HasBody == body
		}
	}
	require.Eventually(t, committed("one-batch", true), waitFor, tick)
	require.Eventually(t, committed("late", false), waitFor, tick)
	// The hand-over follows the store commit: a row can be seen committed
	// a moment before its hand-over is counted.
	require.Eventually(t, func() bool { return fwd.len() == 1 }, waitFor, tick)
	require.Equal(t, "one-batch", fwd.all()[0].Key)

	e.produce(prepareRec("shop", "late", []byte("body")))
	e.lifecycle("shop", 0, 200)
	for _, k := range []string{"late", "k0", "k199"} {
		require.Eventually(t, committed(k, true), waitFor, tick, k)
	}
	require.Eventually(t, func() bool { return fwd.len() == 202 }, waitFor, tick)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_ = first.Stop(ctx)
	require.Zero(t, e.committedCount(), "no commit got through")

	failCommits.Store(false)
	second := e.start(e.config(), st, fwd, NewOwnership())
	e.produce(prepareRec("shop", "new", []byte("n")), decisionRec("shop", "new", "commit"))
	require.Eventually(t, committed("new", true), waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
	require.Equal(t, 203, fwd.len(), "replays handed nothing over again")
	dup := 0.0
	for _, typ := range []string{"prepare", "commit"} {
		dup += testutil.ToFloat64(second.met.envelopes.WithLabelValues(typ, resultDuplicate))
	}
	require.InDelta(t, 2+1+1+400, dup, 0, "every replayed envelope is a no-op")

	seen := map[string]bool{}
	for _, m := range fwd.all() {
		require.False(t, seen[m.Key], "%s handed over twice", m.Key)
		seen[m.Key] = true
		require.Equal(t, m.Partition, partitionOf(t, e, m.BizID+":"+m.Key))
	}
}

// partitionOf is the partition the default partitioner picks for a key.
func partitionOf(t *testing.T, e *env, key string) int32 {
	t.Helper()
	p := kgo.StickyKeyPartitioner(nil).ForTopic(e.topic)
	return int32(p.Partition(&kgo.Record{Key: []byte(key)}, int(e.parts)))
}
