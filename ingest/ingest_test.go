package ingest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
)

func TestAppliesManyKeysAndCommits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4)
	st, fwd := newMemStore(), &handoffs{}
	in := e.start(e.config(), st, fwd, NewOwnership())

	e.lifecycle("shop", 0, 300)

	require.Eventually(t, func() bool { return st.countStatus(state.Committed, true) == 300 }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
	require.Eventually(t, func() bool { return fwd.len() >= 300 }, waitFor, tick)
	seen := map[string]bool{}
	for _, m := range fwd.all() {
		require.Equal(t, state.Committed, m.Status)
		require.True(t, m.HasBody)
		require.NotZero(t, m.LeaseToken, "handed over leased")
		seen[m.Key] = true
	}
	require.Len(t, seen, 300)
	require.InDelta(t, 300, testutil.ToFloat64(in.met.envelopes.WithLabelValues("prepare", resultApplied)), 0)
	require.InDelta(t, 300, testutil.ToFloat64(in.met.envelopes.WithLabelValues("commit", resultApplied)), 0)
}

func TestPrepareAndCommitInOneBatchHandOverOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st, fwd := newMemStore(), &handoffs{}
	// Both envelopes are in the partition before the ingester starts, so
	// its first poll has both.
	e.produce(prepareRec("shop", "o-1", []byte("hello"),
		kgo.RecordHeader{Key: envelope.HeaderCheckAfter, Value: []byte("5000")},
		kgo.RecordHeader{Key: "ec-h-trace", Value: []byte("abc")}),
		decisionRec("shop", "o-1", "commit"))
	e.start(e.config(), st, fwd, NewOwnership())

	require.Eventually(t, e.committedAll, waitFor, tick)
	require.Equal(t, 1, st.applyCount(), "one store transaction")
	require.Equal(t, map[state.Effect]int{state.Changed: 2}, st.effects())
	msgs := fwd.all()
	require.Len(t, msgs, 1)
	m := msgs[0]
	require.Equal(t, "shop", m.BizID)
	require.Equal(t, "o-1", m.Key)
	require.Equal(t, int32(0), m.Partition)
	require.Equal(t, state.Committed, m.Status)
	require.Equal(t, []byte("hello"), m.Payload)
	require.Equal(t, "orders", m.Topic)
	require.Equal(t, []envelope.Header{{Key: "trace", Value: []byte("abc")}}, m.Headers)
}

func TestCheckAfterFromEnvelopeOrConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st := newMemStore()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cfg := e.config()
	cfg.Now = func() time.Time { return now }
	cfg.CheckAfter = func(biz string) time.Duration {
		if biz == "slow" {
			return time.Hour
		}
		return 0 // the default
	}
	var toldMu sync.Mutex
	var told []time.Time
	cfg.CheckDue = func(at time.Time) {
		toldMu.Lock()
		told = append(told, at)
		toldMu.Unlock()
	}
	e.start(cfg, st, nil, NewOwnership())
	e.produce(
		prepareRec("shop", "a", nil, kgo.RecordHeader{Key: envelope.HeaderCheckAfter, Value: []byte("1500")}),
		prepareRec("slow", "b", nil),
		prepareRec("shop", "c", nil),
	)
	require.Eventually(t, e.committedAll, waitFor, tick)
	due := map[time.Time]bool{}
	for key, want := range map[string]time.Duration{"shop/a": 1500 * time.Millisecond, "slow/b": time.Hour, "shop/c": DefaultCheckAfter} {
		biz, k, _ := strings.Cut(key, "/")
		m, ok := st.get(biz, k)
		require.True(t, ok, key)
		require.Equal(t, state.Prepared, m.Status)
		require.Equal(t, now.Add(want), m.VerifyNextAt, key)
		require.Equal(t, now, m.CreatedAt, key)
		due[m.VerifyNextAt] = true
	}
	// The verifier is told when they fall due: the earliest and the
	// latest of each batch, each one a PREPARE's due time.
	toldMu.Lock()
	defer toldMu.Unlock()
	require.NotEmpty(t, told)
	for _, at := range told {
		require.True(t, due[at], "told %s, which is no PREPARE's due time", at)
	}
	require.Contains(t, told, now.Add(1500*time.Millisecond), "the earliest")
	require.Contains(t, told, now.Add(time.Hour), "the latest")
}

func TestCommitBeforePrepare(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st, fwd := newMemStore(), &handoffs{}
	e.start(e.config(), st, fwd, NewOwnership())

	e.produce(decisionRec("shop", "late", "commit"))
	require.Eventually(t, func() bool {
		m, ok := st.get("shop", "late")
		return ok && m.Status == state.Committed && !m.HasBody
	}, waitFor, tick)
	require.Zero(t, fwd.len(), "nothing to send without a body")

	e.produce(prepareRec("shop", "late", []byte("body")))
	require.Eventually(t, func() bool { return fwd.len() == 1 }, waitFor, tick)
	require.Equal(t, []byte("body"), fwd.all()[0].Payload)
	require.Eventually(t, e.committedAll, waitFor, tick)
}

func TestRollbackAndConflictCounted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st, fwd := newMemStore(), &handoffs{}
	in := e.start(e.config(), st, fwd, NewOwnership())
	e.produce(
		prepareRec("shop", "r", []byte("x")), decisionRec("shop", "r", "rollback"),
		decisionRec("shop", "r", "commit"),   // contradicts: ignored
		prepareRec("shop", "r", []byte("x")), // duplicate
	)
	require.Eventually(t, e.committedAll, waitFor, tick)
	m, ok := st.get("shop", "r")
	require.True(t, ok)
	require.Equal(t, state.RolledBack, m.Status)
	require.Equal(t, 1, m.Conflicts)
	require.Zero(t, fwd.len())
	require.InDelta(t, 1, testutil.ToFloat64(in.met.conflicts), 0)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.envelopes.WithLabelValues("commit", resultConflict)), 0)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.envelopes.WithLabelValues("prepare", resultDuplicate)), 0)
}

func TestStoreDownNothingCommittedThenRecovers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2)
	st, fwd := newMemStore(), &handoffs{}
	st.failures.Store(-1)
	in := e.start(e.config(), st, fwd, NewOwnership())
	e.lifecycle("shop", 0, 50)

	require.Eventually(t, func() bool { return st.errs.Load() >= 5 }, waitFor, tick)
	require.Zero(t, e.committedCount(), "no offset committed while the store is down")
	require.Zero(t, st.applyCount())
	require.GreaterOrEqual(t, testutil.ToFloat64(in.met.storeErrs), float64(5))

	st.failures.Store(0) // the database is back
	require.Eventually(t, func() bool { return st.countStatus(state.Committed, true) == 50 }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
	require.Len(t, fwd.all(), 50)
}

func TestRestartSameGroupNoLossReplaysAreNoOps(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2)
	st, fwd := newMemStore(), &handoffs{}

	// The first ingester applies everything but cannot commit offsets.
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
	e.lifecycle("shop", 0, 40)
	require.Eventually(t, func() bool { return st.countStatus(state.Committed, true) == 40 }, waitFor, tick)
	require.Eventually(t, func() bool { return testutil.ToFloat64(first.met.commitErrs) > 0 }, waitFor, tick)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_ = first.Stop(ctx) // the final commit fails too
	require.Zero(t, e.committedCount())
	handed := fwd.len()
	require.Equal(t, 40, handed)

	// Commits work again; a new ingester in the same group replays all.
	failCommits.Store(false)
	before := st.effects()
	second := e.start(e.config(), st, fwd, NewOwnership())
	e.lifecycle("shop", 40, 10)
	require.Eventually(t, func() bool { return st.countStatus(state.Committed, true) == 50 }, waitFor, tick)
	require.Eventually(t, e.committedAll, waitFor, tick)
	after := st.effects()
	require.Equal(t, 80, after[state.NoOp]-before[state.NoOp], "the 80 replayed envelopes are no-ops")
	require.Equal(t, 20, after[state.Changed]-before[state.Changed], "only the 10 new messages changed")
	require.Equal(t, 50, fwd.len(), "replays hand nothing over again")
	require.InDelta(t, 40, testutil.ToFloat64(second.met.envelopes.WithLabelValues("prepare", resultDuplicate)), 0)
}

func TestMalformedRecordsGoToDLQAndDoNotBlock(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st, fwd := newMemStore(), &handoffs{}
	cfg := e.config()
	cfg.MaxPayload = 16
	in := e.start(cfg, st, fwd, NewOwnership())

	noBiz := decisionRec("shop", "x", "commit")
	noBiz.Headers = noBiz.Headers[:1:1]
	noBiz.Headers = append(noBiz.Headers, kgo.RecordHeader{Key: envelope.HeaderKey, Value: []byte("x")})
	unknown := decisionRec("shop", "x", "maybe")
	mismatch := decisionRec("shop", "x", "commit")
	mismatch.Key = []byte("shop:other")
	big := prepareRec("shop", "big", []byte(strings.Repeat("z", 17)))
	badJSON := &kgo.Record{Key: []byte("shop:j"), Value: []byte("{not json")}
	bad := []*kgo.Record{noBiz, unknown, mismatch, big, badJSON}
	e.produce(prepareRec("shop", "before", []byte("ok")))
	e.produce(bad...)
	e.produce(prepareRec("shop", "after", []byte("ok")), decisionRec("shop", "after", "commit"))

	require.Eventually(t, func() bool { return fwd.len() == 1 }, waitFor, tick)
	require.Equal(t, "after", fwd.all()[0].Key)
	_, ok := st.get("shop", "before")
	require.True(t, ok)
	require.Eventually(t, e.committedAll, waitFor, tick)

	dead := e.readDLQ(len(bad))
	require.Len(t, dead, len(bad))
	for i, d := range dead {
		hs := map[string]string{}
		for _, h := range d.Headers {
			hs[h.Key] = string(h.Value)
		}
		require.Equal(t, bad[i].Key, d.Key)
		require.Equal(t, bad[i].Value, d.Value)
		require.Equal(t, e.topic, hs[envelope.HeaderDLQTopic])
		require.Equal(t, "0", hs[envelope.HeaderDLQPartition])
		require.Equal(t, strconv.Itoa(i+1), hs[envelope.HeaderDLQOffset])
		require.NotEmpty(t, hs[envelope.HeaderDLQReason])
		for _, h := range bad[i].Headers {
			require.Equal(t, string(h.Value), hs[h.Key], "original header %s kept", h.Key)
		}
	}
	require.Contains(t, string(dead[0].Headers[len(dead[0].Headers)-4].Value), "ec-biz")
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlq.WithLabelValues("ec-biz")), 0)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlq.WithLabelValues("unknown_type")), 0)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlq.WithLabelValues("key")), 0)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlq.WithLabelValues("too_large")), 0)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlq.WithLabelValues("value")), 0, "bad JSON")
	require.InDelta(t, 2, testutil.ToFloat64(in.met.envelopes.WithLabelValues("commit", resultInvalid)), 0)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.envelopes.WithLabelValues("prepare", resultInvalid)), 0)
	require.InDelta(t, 2, testutil.ToFloat64(in.met.envelopes.WithLabelValues("unknown", resultInvalid)), 0)
}

func TestDLQProduceFailureRetriedNeverLost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st := newMemStore()
	failed, dlqID := 0, e.topicID(e.dlq)
	e.cluster.ControlKey(kmsgProduceKey.Int16(), func(kreq kmsgRequest) (kmsgResponse, error, bool) {
		// An error franz-go gives up on at once but that the ingester
		// treats as transient: retried within the budget.
		resp, ok := failProduceTo(kreq, e.dlq, dlqID, kerr.UnknownServerError.Code)
		if !ok {
			return nil, nil, false
		}
		failed++
		if failed > 3 {
			e.cluster.DropControl()
			return nil, nil, false
		}
		e.cluster.KeepControl()
		return resp, nil, true
	})
	in := e.start(e.config(), st, nil, NewOwnership())
	e.produce(decisionRec("shop", "x", "maybe"), decisionRec("shop", "y", "commit"))

	require.Eventually(t, e.committedAll, waitFor, tick)
	require.GreaterOrEqual(t, testutil.ToFloat64(in.met.dlqErrs), float64(1))
	dead := e.readDLQ(1)
	require.Equal(t, []byte("shop:x"), dead[0].Key)
	require.NotContains(t, headerMap(dead[0]), envelope.HeaderDLQValueDropped, "written in full")
	_, ok := st.get("shop", "y")
	require.True(t, ok)
}

func TestOwnershipFollowsAssignment(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3)
	owned := NewOwnership()
	in := e.start(e.config(), newMemStore(), nil, owned)
	require.Eventually(t, func() bool { return len(owned.Partitions()) == 3 }, waitFor, tick)
	require.Equal(t, []int32{0, 1, 2}, owned.Partitions())
	require.InDelta(t, 3, testutil.ToFloat64(in.met.owned), 0)

	require.NoError(t, in.Stop(t.Context()))
	require.Empty(t, owned.Partitions())
	require.InDelta(t, 0, testutil.ToFloat64(in.met.owned), 0)
}

func TestCompatibilityFormatApplied(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st, fwd := newMemStore(), &handoffs{}
	e.start(e.config(), st, fwd, NewOwnership())
	e.produce(
		&kgo.Record{Key: []byte("7:order-1"), Value: []byte(`{"message":"{\"id\":1}","bizID":7,"messageKey":"order-1","messageStatus":1,"forwardTopic":"orders","forwardKey":"o1"}`)},
		&kgo.Record{Key: []byte("7:order-1"), Value: []byte(`{"bizID":7,"messageKey":"order-1","messageStatus":2}`)},
	)
	require.Eventually(t, func() bool { return fwd.len() == 1 }, waitFor, tick)
	m := fwd.all()[0]
	require.Equal(t, "7", m.BizID)
	require.Equal(t, "order-1", m.Key)
	require.Equal(t, []byte(`{"id":1}`), m.Payload)
	require.Equal(t, "o1", m.ForwardKey)
	require.Eventually(t, e.committedAll, waitFor, tick)
}

func TestConsumerLagFromHighWatermark(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st := newMemStore()
	st.gate, st.entered = make(chan struct{}), make(chan struct{}, 1)
	var rs []*kgo.Record
	for i := range 100 {
		rs = append(rs, decisionRec("shop", "k"+strconv.Itoa(i), "rollback"))
	}
	e.produce(rs...)
	cfg := e.config()
	cfg.MaxPollRecords = 10
	in := e.start(cfg, st, nil, NewOwnership())
	lag := in.met.lag.WithLabelValues("0")

	<-st.entered
	st.gate <- struct{}{} // the first batch of 10 applies
	<-st.entered          // the second is in hand
	require.InDelta(t, 90, testutil.ToFloat64(lag), 0)
	close(st.gate)
	require.Eventually(t, e.committedAll, waitFor, tick)
	require.InDelta(t, 0, testutil.ToFloat64(lag), 0)
	require.Equal(t, 10, st.applyCount(), "one store transaction per poll batch")
}

// A batch also takes what reached the broker while the previous batch was
// applied. franz-go answers a poll from the one fetch it buffered, sent
// when the previous poll took its records: without a second look, records
// that arrived after that fetch was answered waited for one more whole
// apply (half of the commit → forward latency at 16,000 msg/s).
func TestBatchTakesWhatArrivedDuringTheApply(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st := newMemStore()
	st.gate, st.entered = make(chan struct{}), make(chan struct{}, 1)
	cfg := e.config()
	// Generous, for a loaded machine: the fetch it waits for is answered
	// at once, since the broker holds a record.
	cfg.FreshFetchWait = 2 * time.Second
	// Two records before the start: the first batch holds both, so
	// records arrive faster than one per batch.
	e.produce(decisionRec("shop", "a1", "rollback"), decisionRec("shop", "a2", "rollback"))
	e.start(cfg, st, nil, NewOwnership())

	<-st.entered // {a1, a2} is being applied
	e.produce(decisionRec("shop", "b", "rollback"))
	// The fetch sent when {a} was polled brings b and is buffered; no
	// other fetch is sent until it is taken, so c stays at the broker.
	time.Sleep(300 * time.Millisecond)
	e.produce(decisionRec("shop", "c", "rollback"))
	time.Sleep(300 * time.Millisecond)
	close(st.gate)
	require.Eventually(t, e.committedAll, waitFor, tick)

	st.mu.Lock()
	defer st.mu.Unlock()
	var batches [][]string
	for _, req := range st.applies {
		var keys []string
		for _, c := range req.Changes {
			keys = append(keys, c.Key)
		}
		batches = append(batches, keys)
	}
	require.Equal(t, [][]string{{"a1", "a2"}, {"b", "c"}}, batches, "b and c are applied together")
}

// When the previous poll brought a single record, records arrive slower
// than batches are applied: what is buffered is applied at once, not held
// for a fetch that would find nothing.
func TestSlowArrivalsDoNotWaitForAFreshFetch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st := newMemStore()
	st.gate, st.entered = make(chan struct{}), make(chan struct{}, 1)
	cfg := e.config()
	cfg.FreshFetchWait = 3 * time.Second
	e.start(cfg, st, nil, NewOwnership())

	e.produce(decisionRec("shop", "a", "rollback"))
	<-st.entered // {a} is being applied
	e.produce(decisionRec("shop", "b", "rollback"))
	time.Sleep(100 * time.Millisecond) // b's fetch is answered and buffered
	released := time.Now()
	close(st.gate)
	require.Eventually(t, func() bool { _, ok := st.get("shop", "b"); return ok }, waitFor, time.Millisecond)
	require.Less(t, time.Since(released), 1500*time.Millisecond, "b waited for a fetch with nothing to bring")
}
