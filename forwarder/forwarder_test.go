package forwarder_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/internal/fieldcheck"
	"github.com/eventcenter/eventcenter/internal/startstop"
	"github.com/eventcenter/eventcenter/internal/startstop/startstoptest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/memstore"
)

func TestFastPathSendsAtOnceAndBatchesMarks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) {
		c.ScanInterval = time.Hour // only the handoff can send
		c.MarkInterval = 20 * time.Millisecond
	})
	msgs := h.commit(t, 300, 0, "", testLease)
	began := time.Now()
	h.f.Handoff(msgs[:1])
	h.f.Handoff(msgs[1:150])
	h.f.Handoff(msgs[150:])
	require.Eventually(t, func() bool { return h.st.Count(state.SendSent) == 300 }, 10*time.Second, time.Millisecond)
	h.targets["main"].mu.Lock()
	firstAfter := h.targets["main"].first.Sub(began)
	h.targets["main"].mu.Unlock()
	t.Logf("first record reached the target %s after Handoff", firstAfter)
	require.Less(t, firstAfter, time.Second)

	marks := h.st.Calls().MarkSent
	t.Logf("300 messages marked sent in %d MarkSent calls", marks)
	require.LessOrEqual(t, marks, 30, "sent marks are not batched")
	require.Len(t, h.targets["main"].sentIDs(), 300)

	got := h.get(t, msgs[0])
	require.Equal(t, state.SendSent, got.SendStatus)
	require.True(t, strings.HasPrefix(got.SendRef, "fake/"), got.SendRef)
	require.Equal(t, 300.0, h.counter(t, "eventcenter_forward_total", "target", "main", "result", "sent"))
	// Observed just after the marks are written.
	require.Eventually(t, func() bool { return h.histCount(t, "eventcenter_commit_to_sent_seconds") == 300 },
		5*time.Second, time.Millisecond)
}

func TestRecordCarriesKeyValueHeadersAndID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	msgs := h.commit(t, 1, 0, "", testLease)
	h.f.Handoff(msgs)
	h.waitStatus(t, msgs[0], state.SendSent)
	recs := h.targets["main"].sent()
	require.Len(t, recs, 1)
	id := msgs[0].MessageID()
	require.Equal(t, forwarder.Record{
		ID:    id,
		Topic: "biz-topic",
		Key:   "fk-" + msgs[0].Key,
		Tag:   "tagA",
		Value: []byte("payload-" + msgs[0].Key),
		Headers: []envelope.Header{
			{Key: "trace", Value: []byte("t-" + msgs[0].Key)},
			{Key: "ec-id", Value: []byte(id)},
		},
	}, recs[0])
}

func TestBuildRecordReplacesProducerID(t *testing.T) {
	t.Parallel()
	m := state.Message{
		BizID: "b", Key: "k:1", Topic: "t", ForwardKey: "fk", Payload: []byte("v"),
		Headers: []envelope.Header{{Key: "ec-id", Value: []byte("forged")}, {Key: "a", Value: nil}},
	}
	r := forwarder.BuildRecord(&m)
	require.Equal(t, "b:k:1", r.ID)
	require.Equal(t, []envelope.Header{{Key: "a"}, {Key: "ec-id", Value: []byte("b:k:1")}}, r.Headers)
	require.Equal(t, "ec-id", envelope.HeaderID)
}

func TestScanPicksUpDueAndExpiredLeases(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	// Leased for the fast path, but never handed over (the process died).
	leased := h.commit(t, 5, 0, "", testLease)
	// Due now (written without a lease, as after a restart).
	due := h.commit(t, 3, 0, "", 0)
	for _, m := range due {
		h.waitStatus(t, m, state.SendSent)
	}
	claims := h.st.Calls().ClaimSends
	require.Eventually(t, func() bool { c := h.st.Calls().ClaimSends; return c >= claims+3 }, 5*time.Second, time.Millisecond)
	for _, m := range leased {
		require.Equal(t, state.SendPending, h.get(t, m).SendStatus, "sent before its lease ran out")
	}
	h.clock.Advance(testLease)
	for _, m := range leased {
		h.waitStatus(t, m, state.SendSent)
	}
	require.Len(t, h.targets["main"].sentIDs(), 8)
}

func TestClaimErrorsAreRetriedAtTheNextScan(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.st.FailClaimSends(errors.New("db down"), errors.New("db down"), errors.New("db down"))
	due := h.commit(t, 2, 0, "", 0)
	for _, m := range due {
		h.waitStatus(t, m, state.SendSent)
	}
}

func TestFailedSendRetriedWithBackoffThenDelivered(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	failures := 0
	h.targets["main"].setFail(func(forwarder.Record) error {
		if failures < 2 {
			failures++
			return errBroker
		}
		return nil
	})
	msgs := h.commit(t, 1, 0, "", testLease)
	t0 := h.clock.Now()
	h.f.Handoff(msgs)

	var got state.Message
	require.Eventually(t, func() bool { got = h.get(t, msgs[0]); return got.SendAttempts == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, state.SendPending, got.SendStatus)
	require.Equal(t, errBroker.Error(), got.LastError)
	// Base 1s, attempt 0: uniform in [0.5s, 1s]; the injected source gives 0.75s.
	require.Equal(t, t0.Add(750*time.Millisecond), got.SendNextAt)

	h.clock.Advance(750 * time.Millisecond)
	require.Eventually(t, func() bool { got = h.get(t, msgs[0]); return got.SendAttempts == 2 }, 5*time.Second, time.Millisecond)
	// Attempt 1: 2s → 1.5s.
	require.Equal(t, t0.Add(750*time.Millisecond+1500*time.Millisecond), got.SendNextAt)

	h.clock.Advance(1500 * time.Millisecond)
	got = h.waitStatus(t, msgs[0], state.SendSent)
	require.Equal(t, 2, got.SendAttempts)
	require.Equal(t, map[string]int{msgs[0].MessageID(): 1}, h.targets["main"].sentIDs())
	require.Eventually(t, func() bool {
		return h.counter(t, "eventcenter_forward_total", "target", "main", "result", "retry") == 2
	}, 5*time.Second, time.Millisecond)
	require.Equal(t, 1.0, h.counter(t, "eventcenter_forward_total", "target", "main", "result", "sent"))
}

func TestPersistentFailureEndsDeadWithTheError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil) // MaxAttempts 5
	h.targets["main"].setFail(func(forwarder.Record) error { return errBroker })
	msgs := h.commit(t, 1, 0, "", testLease)
	h.f.Handoff(msgs)
	var got state.Message
	require.Eventually(t, func() bool {
		got = h.get(t, msgs[0])
		if got.SendStatus == state.SendDead {
			return true
		}
		h.clock.Advance(8 * time.Second) // past any backoff (Cap 8s)
		return false
	}, 10*time.Second, 2*time.Millisecond)
	require.Equal(t, 5, got.SendAttempts)
	require.Equal(t, errBroker.Error(), got.LastError)
	require.Eventually(t, func() bool {
		return h.counter(t, "eventcenter_forward_dead_total", "target", "main") == 1
	}, 5*time.Second, time.Millisecond)
	require.Equal(t, 1.0, h.counter(t, "eventcenter_forward_total", "target", "main", "result", "dead"))
	require.Equal(t, 4.0, h.counter(t, "eventcenter_forward_total", "target", "main", "result", "retry"))
}

func TestPermanentErrorIsDeadAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.targets["main"].setFail(func(forwarder.Record) error {
		return forwarder.Permanent(errors.New(`record for topic "biz-topic" is too large`))
	})
	msgs := h.commit(t, 1, 0, "", testLease)
	h.f.Handoff(msgs)
	got := h.waitStatus(t, msgs[0], state.SendDead)
	require.Equal(t, 1, got.SendAttempts)
	require.Equal(t, `record for topic "biz-topic" is too large`, got.LastError)
}

func TestUnknownTargetIsDeadWhileOthersFlow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	bad := h.commit(t, 3, 0, "nowhere", testLease)
	good := h.commit(t, 10, 0, "", testLease)
	other := h.commit(t, 5, 0, "other", testLease)
	h.f.Handoff(append(append(append([]state.Message{}, good[:5]...), bad...), append(good[5:], other...)...))
	for _, m := range bad {
		got := h.waitStatus(t, m, state.SendDead)
		require.Equal(t, `forward target "nowhere" is not configured`, got.LastError)
	}
	for _, m := range append(good, other...) {
		h.waitStatus(t, m, state.SendSent)
	}
	require.Len(t, h.targets["main"].sentIDs(), 10)
	require.Len(t, h.targets["other"].sentIDs(), 5)
	require.Eventually(t, func() bool {
		return h.counter(t, "eventcenter_forward_dead_total", "target", "unconfigured") == 3
	}, 5*time.Second, time.Millisecond)
}

func TestStoreOutageDoesNotLoseMarks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	down := errors.New("database is down")
	h.st.FailMarkSent(down, down, down, down)
	msgs := h.commit(t, 50, 0, "", testLease)
	h.f.Handoff(msgs)
	require.Eventually(t, func() bool { return h.st.Count(state.SendSent) == 50 }, 10*time.Second, time.Millisecond)
	marks := h.st.Calls().MarkSent
	require.GreaterOrEqual(t, marks, 5)
	for id, n := range h.targets["main"].sentIDs() {
		require.Equal(t, 1, n, "%s sent %d times", id, n)
	}
}

func TestStoreOutageDoesNotLoseFailures(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	down := errors.New("database is down")
	h.targets["main"].setFail(func(forwarder.Record) error { return forwarder.Permanent(errors.New("rejected")) })
	msgs := h.commit(t, 1, 0, "", testLease)
	h.st.FailApply(down, down, down)
	h.f.Handoff(msgs)
	got := h.waitStatus(t, msgs[0], state.SendDead)
	require.Equal(t, "rejected", got.LastError)
	applies := h.st.Calls().Apply
	require.GreaterOrEqual(t, applies, 1+4) // the commit, three failed writes, the one that worked
}

func TestStopFlushesPendingMarks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) {
		c.MarkInterval = time.Hour
		c.MarkBatch = 10_000
	})
	msgs := h.commit(t, 20, 0, "", testLease)
	h.f.Handoff(msgs)
	require.Eventually(t, func() bool { return len(h.targets["main"].sentIDs()) == 20 }, 5*time.Second, time.Millisecond)
	require.Equal(t, 0, h.st.Count(state.SendSent), "marks written before the batch filled or the ticker fired")
	require.NoError(t, h.f.Stop(t.Context()))
	require.Equal(t, 20, h.st.Count(state.SendSent))
	marks := h.st.Calls().MarkSent
	require.Equal(t, 1, marks)
}

func TestStopReportsMarksItCouldNotWrite(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) { c.MarkInterval = time.Hour })
	errs := make([]error, 100_000)
	for i := range errs {
		errs[i] = errors.New("database is down")
	}
	h.st.FailMarkSent(errs...)
	msgs := h.commit(t, 1, 0, "", testLease)
	h.f.Handoff(msgs)
	require.Eventually(t, func() bool { return len(h.targets["main"].sentIDs()) == 1 }, 5*time.Second, time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := h.f.Stop(ctx)
	require.ErrorContains(t, err, "1 sent marks and 0 send failures not written")
	require.ErrorContains(t, err, "database is down")
}

func TestStopAbortsInFlightSendWithoutBurningAnAttempt(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	inSend := make(chan struct{}, 1)
	h := newHarness(t, nil)
	h.targets["main"].mu.Lock()
	h.targets["main"].gate, h.targets["main"].inSend = gate, inSend
	h.targets["main"].mu.Unlock()
	msgs := h.commit(t, 1, 0, "", testLease)
	h.f.Handoff(msgs)
	<-inSend
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, h.f.Stop(ctx))
	got := h.get(t, msgs[0])
	require.Equal(t, state.SendPending, got.SendStatus)
	require.Equal(t, 0, got.SendAttempts)
	h.f.Handoff(msgs) // after Stop: dropped, counted
	require.Equal(t, 1.0, h.counter(t, "eventcenter_forward_handoff_dropped_total"))
}

func TestCancelledStartContextKeepsSendingUntilStop(t *testing.T) {
	t.Parallel()
	st := memstore.New(nil)
	owned := ingest.NewOwnership()
	owned.Assign(0)
	gate := make(chan struct{})
	inSend := make(chan struct{}, 1)
	ft := &fakeTarget{gate: gate, inSend: inSend}
	f, err := forwarder.New(forwarder.Config{
		Targets: map[string]forwarder.Target{"x": ft}, MarkInterval: time.Hour,
		Logger: slog.New(slog.DiscardHandler),
	}, st, owned)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	require.NoError(t, f.Start(ctx))
	first, err := st.Apply(t.Context(), commitReq("b", "k1", 0))
	require.NoError(t, err)
	f.Handoff(first.Sendable)
	<-inSend
	cancel() // e.g. the shutdown signal, before ingest has stopped
	second, err := st.Apply(t.Context(), commitReq("b", "k2", 0))
	require.NoError(t, err)
	f.Handoff(second.Sendable) // what ingest hands over while it stops
	close(gate)
	require.NoError(t, f.Stop(t.Context()))
	for _, k := range []string{"k1", "k2"} {
		got, err := st.Get(t.Context(), "b", k)
		require.NoError(t, err)
		require.Equal(t, state.SendSent, got.SendStatus, k)
		require.Equal(t, 0, got.SendAttempts, k)
	}
}

func TestStopDrainsQueuedSends(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	inSend := make(chan struct{}, 1)
	h := newHarness(t, func(c *forwarder.Config) { c.Concurrency = 1; c.BatchSize = 1 })
	ft := h.targets["main"]
	ft.mu.Lock()
	ft.gate, ft.inSend = gate, inSend
	ft.mu.Unlock()
	msgs := h.commit(t, 4, 0, "", testLease)
	h.f.Handoff(msgs)
	<-inSend
	stopped := make(chan error, 1)
	go func() { stopped <- h.f.Stop(t.Context()) }()
	close(gate)
	require.NoError(t, <-stopped)
	require.Equal(t, 4, h.st.Count(state.SendSent))
}

func TestRevokedPartitionsAreNotSent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) { c.Concurrency = 1 })
	notOwned := h.commit(t, 3, 1, "", testLease)
	dueNotOwned := h.commit(t, 2, 1, "", 0)
	h.f.Handoff(notOwned)
	owned := h.commit(t, 2, 0, "", testLease)
	h.f.Handoff(owned)
	for _, m := range owned {
		h.waitStatus(t, m, state.SendSent)
	}
	claims := h.st.Calls().ClaimSends
	require.Eventually(t, func() bool { c := h.st.Calls().ClaimSends; return c >= claims+3 }, 5*time.Second, time.Millisecond)
	require.Len(t, h.targets["main"].sentIDs(), 2)
	for _, m := range append(notOwned, dueNotOwned...) {
		require.Equal(t, state.SendPending, h.get(t, m).SendStatus)
	}

	// Revoked while queued: skipped when it comes up.
	gate := make(chan struct{})
	inSend := make(chan struct{}, 1)
	ft := h.targets["main"]
	ft.mu.Lock()
	ft.gate, ft.inSend = gate, inSend
	ft.mu.Unlock()
	first := h.commit(t, 1, 0, "", testLease)
	h.f.Handoff(first)
	<-inSend // the only worker is busy with first
	queued := h.commit(t, 2, 0, "", testLease)
	h.f.Handoff(queued)
	h.owned.Revoke(0)
	close(gate)
	h.waitStatus(t, first[0], state.SendSent)
	h.owned.Assign(2) // a later batch proves the queue moved on
	later := h.commit(t, 1, 2, "", testLease)
	h.f.Handoff(later)
	h.waitStatus(t, later[0], state.SendSent)
	for _, m := range queued {
		require.Equal(t, state.SendPending, h.get(t, m).SendStatus)
		require.Zero(t, h.targets["main"].sentIDs()[m.MessageID()])
	}
}

func TestOwnershipChangeScansAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) { c.ScanInterval = time.Hour })
	due := h.commit(t, 2, 3, "", 0)
	require.Eventually(t, func() bool { c := h.st.Calls().ClaimSends; return c >= 1 }, 5*time.Second, time.Millisecond)
	h.owned.Assign(3)
	for _, m := range due {
		h.waitStatus(t, m, state.SendSent)
	}
}

func TestHandoffWithoutWaitDropsWhenTheQueueIsFull(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	inSend := make(chan struct{}, 1)
	h := newHarness(t, func(c *forwarder.Config) {
		c.QueueSize, c.Concurrency, c.BatchSize, c.HandoffWait = 2, 1, 1, -1
	})
	ft := h.targets["main"]
	ft.mu.Lock()
	ft.gate, ft.inSend = gate, inSend
	ft.mu.Unlock()
	msgs := h.commit(t, 6, 0, "", testLease)
	h.f.Handoff(msgs[:1])
	<-inSend
	began := time.Now()
	h.f.Handoff(msgs[1:])
	require.Less(t, time.Since(began), 100*time.Millisecond, "Handoff blocked")
	// Three of the five found no room. Their release wakes the scan at
	// once, and a scan that claims them while the queue is still full drops
	// and releases them again, so the counters can run past three by the
	// time they are read (seen in about 1 run in 100): three is the floor.
	require.GreaterOrEqual(t, h.counter(t, "eventcenter_forward_handoff_dropped_total"), 3.0)
	close(gate)
	// The dropped ones had their leases released (due now): the scan brings
	// them back as soon as the queue has room, without the clock reaching
	// their lease. (This test once waited to see exactly the three queued
	// ones sent first; with the release, the scan can send the other three
	// within a scan interval, so that moment was easy to miss.)
	require.Eventually(t, func() bool { return h.st.Count(state.SendSent) == 6 }, 5*time.Second, time.Millisecond)
	require.GreaterOrEqual(t, h.counter(t, "eventcenter_forward_handoff_released_total"), 3.0)
	ids := ft.sentIDs()
	require.Len(t, ids, 6)
	for id, n := range ids {
		require.Equal(t, 1, n, "message %s sent once", id)
	}
}

func TestStartTwiceAndStopBeforeStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	require.NoError(t, h.f.Start(t.Context()), "Start while started is a no-op (internal/startstop)")

	f, err := forwarder.New(forwarder.Config{Targets: map[string]forwarder.Target{"x": &fakeTarget{}}},
		memstore.New(nil), ingest.NewOwnership())
	require.NoError(t, err)
	require.NoError(t, f.Stop(t.Context()))
	require.ErrorIs(t, f.Start(t.Context()), startstop.ErrStopped)
}

// The forwarder follows the shared start/stop semantics.
func TestForwarderStartStop(t *testing.T) {
	t.Parallel()
	startstoptest.Exercise(t, func(t *testing.T) startstoptest.Service {
		f, err := forwarder.New(forwarder.Config{Targets: map[string]forwarder.Target{"x": &fakeTarget{}}},
			memstore.New(nil), ingest.NewOwnership())
		require.NoError(t, err)
		return f
	})
}

func TestMetricsRegistration(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	_, err := forwarder.New(h.cfg, h.st, h.owned)
	require.ErrorContains(t, err, "register forwarder metrics")
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	tgt := &fakeTarget{}
	two := map[string]forwarder.Target{"a": tgt, "b": tgt}
	for _, tc := range []struct {
		name string
		cfg  forwarder.Config
		want string
	}{
		{"no targets", forwarder.Config{}, "Targets: at least one"},
		{"nil target", forwarder.Config{Targets: map[string]forwarder.Target{"a": nil}}, `Targets["a"]: nil target`},
		{"no default of several", forwarder.Config{Targets: two}, "DefaultTarget: required with several targets (one of a, b)"},
		{"unknown default", forwarder.Config{Targets: two, DefaultTarget: "c"}, `DefaultTarget: "c" is not one of the targets (a, b)`},
		{"negative lease", forwarder.Config{Targets: two, DefaultTarget: "a", Lease: -time.Second}, "Lease: must be at least 1s, got -1s"},
		{"handoff wait over lease", forwarder.Config{Targets: two, DefaultTarget: "a", Lease: 10 * time.Second, SendTimeout: time.Second, HandoffWait: 10 * time.Second}, "HandoffWait: must be shorter than Lease (10s), or a waiting handoff could outlive its lease, got 10s"},
		{"send timeout over lease", forwarder.Config{Targets: two, DefaultTarget: "a", Lease: time.Second, SendTimeout: 2 * time.Second}, "SendTimeout: must be shorter than Lease (1s), or a send could outlive its lease, got 2s"},
		{"batch", forwarder.Config{Targets: two, DefaultTarget: "a", BatchSize: -1}, "BatchSize: must be positive, got -1"},
		{"concurrency", forwarder.Config{Targets: two, DefaultTarget: "a", Concurrency: -1}, "Concurrency: must be positive, got -1"},
		{"mark batch", forwarder.Config{Targets: two, DefaultTarget: "a", MarkBatch: -1}, "MarkBatch: must be positive, got -1"},
		{"max attempts", forwarder.Config{Targets: two, DefaultTarget: "a", MaxAttempts: -1}, "MaxAttempts: must be positive, got -1"},
		{"backoff", forwarder.Config{Targets: two, DefaultTarget: "a", Backoff: forwarder.Backoff{Base: time.Minute, Cap: time.Second}}, "Backoff.Cap: must not be below Backoff.Base (1m0s), got 1s"},
		{"breaker cooldown", forwarder.Config{Targets: two, DefaultTarget: "a", Breaker: forwarder.Breaker{Cooldown: -time.Second}}, "Breaker.Cooldown: must be positive, got -1s"},
		{"lease under a second", forwarder.Config{Targets: two, DefaultTarget: "a", Lease: 999 * time.Millisecond, SendTimeout: 100 * time.Millisecond, InlineTimeout: -1}, "Lease: must be at least 1s, got 999ms"},
		{"biz weight", forwarder.Config{Targets: two, DefaultTarget: "a", Biz: map[string]forwarder.BizLimits{"x": {Weight: -1}}}, `Biz["x"].Weight: must not be negative`},
		{"biz max in flight", forwarder.Config{Targets: two, DefaultTarget: "a", Biz: map[string]forwarder.BizLimits{"x": {MaxInFlight: -1}}}, `Biz["x"].MaxInFlight: must not be negative`},
		{"breaker max cooldown", forwarder.Config{Targets: two, DefaultTarget: "a", Breaker: forwarder.Breaker{Cooldown: time.Minute, MaxCooldown: time.Second}}, "Breaker.MaxCooldown: must not be below Breaker.Cooldown (1m0s), got 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := forwarder.New(tc.cfg, memstore.New(nil), ingest.NewOwnership())
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := forwarder.New(forwarder.Config{Targets: two, DefaultTarget: "a"}, nil, ingest.NewOwnership())
	require.ErrorContains(t, err, "nil Store")
	_, err = forwarder.New(forwarder.Config{Targets: two, DefaultTarget: "a"}, memstore.New(nil), nil)
	require.ErrorContains(t, err, "nil Owned")
}

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	lo := forwarder.Backoff{Base: time.Second, Cap: 10 * time.Second, Rand: func() float64 { return 0 }}
	hi := lo
	hi.Rand = func() float64 { return 0.999999999 }
	for attempt, want := range []time.Duration{1, 2, 4, 8, 10, 10} {
		want *= time.Second
		require.Equal(t, want/2, lo.Delay(attempt), "attempt %d", attempt)
		require.InDelta(t, float64(want), float64(hi.Delay(attempt)), float64(time.Microsecond), "attempt %d", attempt)
	}
	require.Equal(t, 5*time.Second, lo.Delay(1000), "no overflow")
	require.Equal(t, 500*time.Millisecond, lo.Delay(-1))
	// The default source stays within bounds.
	d := forwarder.Backoff{Base: time.Second, Cap: time.Minute}
	for range 100 {
		got := d.Delay(3)
		require.GreaterOrEqual(t, got, 4*time.Second)
		require.LessOrEqual(t, got, 8*time.Second)
	}
}

func commitReq(biz, key string, partition int32) store.ApplyRequest {
	body := &state.Body{Payload: []byte("v"), Topic: "t"}
	at := time.Now()
	return store.ApplyRequest{
		Changes: []store.Change{
			{BizID: biz, Key: key, Partition: partition, Event: state.Event{Kind: state.KindPrepare, At: at, Body: body}},
			{BizID: biz, Key: key, Partition: partition, Event: state.Event{Kind: state.KindCommit, At: at}},
		},
		SendLease: testLease,
	}
}

func TestStuckTargetDoesNotStopTheScanForOthers(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	defer close(gate)
	inSend := make(chan struct{}, 1)
	h := newHarness(t, func(c *forwarder.Config) {
		c.QueueSize, c.Concurrency, c.BatchSize = 2, 1, 1
		c.SendTimeout = 25 * time.Second // stuck for longer than the test waits
	})
	ft := h.targets["other"]
	ft.mu.Lock()
	ft.gate, ft.inSend = gate, inSend
	ft.mu.Unlock()
	stuck := h.commit(t, 3, 0, "other", testLease)
	h.f.Handoff(stuck[:1])
	<-inSend
	h.f.Handoff(stuck[1:]) // fills the "other" queue
	due := h.commit(t, 4, 0, "", 0)
	for _, m := range due {
		h.waitStatus(t, m, state.SendSent)
	}
}

func TestBreakerPausesAFailingTargetWithoutBurningAttempts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) {
		c.Concurrency, c.BatchSize = 1, 1
		c.Breaker = forwarder.Breaker{Failures: 2, FailingFor: -1, Cooldown: 10 * time.Second}
	})
	ft := h.targets["main"]
	ft.setFail(func(forwarder.Record) error { return errBroker })
	msgs := h.commit(t, 3, 0, "", testLease)
	for _, m := range msgs[:2] {
		h.f.Handoff([]state.Message{m})
		require.Eventually(t, func() bool { return h.get(t, m).SendAttempts == 1 }, 5*time.Second, time.Millisecond)
	}
	require.Equal(t, 1.0, h.gauge(t, "eventcenter_forward_breaker_open", "target", "main"))

	// Open: the third is not sent, and keeps its attempts.
	h.f.Handoff(msgs[2:])
	require.Eventually(t, func() bool {
		return h.counter(t, "eventcenter_forward_total", "target", "main", "result", "deferred") == 1
	}, 5*time.Second, time.Millisecond)
	ft.mu.Lock()
	require.Equal(t, 2, ft.calls)
	ft.mu.Unlock()
	require.Equal(t, 0, h.get(t, msgs[2]).SendAttempts)

	// The target recovers; after the cooldown a probe closes the breaker.
	ft.setFail(nil)
	h.clock.Advance(10 * time.Second)
	h.waitStatus(t, msgs[0], state.SendSent)
	h.waitStatus(t, msgs[1], state.SendSent)
	require.Equal(t, 0.0, h.gauge(t, "eventcenter_forward_breaker_open", "target", "main"))
	h.clock.Advance(testLease)
	got := h.waitStatus(t, msgs[2], state.SendSent)
	require.Equal(t, 0, got.SendAttempts)
}

func TestBreakerFailedProbeReopens(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) {
		c.Concurrency, c.BatchSize = 1, 1
		c.Breaker = forwarder.Breaker{Failures: 1, FailingFor: -1, Cooldown: 10 * time.Second}
		c.Backoff = forwarder.Backoff{Base: 20 * time.Second, Cap: 20 * time.Second, Rand: func() float64 { return 0 }}
	})
	ft := h.targets["main"]
	ft.setFail(func(forwarder.Record) error { return errBroker })
	msgs := h.commit(t, 1, 0, "", testLease)
	h.f.Handoff(msgs)
	require.Eventually(t, func() bool { return h.get(t, msgs[0]).SendAttempts == 1 }, 5*time.Second, time.Millisecond)
	h.clock.Advance(10 * time.Second) // due (backoff 10s), cooldown over: a probe
	require.Eventually(t, func() bool { return h.get(t, msgs[0]).SendAttempts == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, 1.0, h.gauge(t, "eventcenter_forward_breaker_open", "target", "main"))
	// Reopened for another cooldown: due again but deferred.
	more := h.commit(t, 1, 0, "", testLease)
	h.f.Handoff(more)
	require.Eventually(t, func() bool {
		return h.counter(t, "eventcenter_forward_total", "target", "main", "result", "deferred") >= 1
	}, 5*time.Second, time.Millisecond)
	ft.mu.Lock()
	require.Equal(t, 2, ft.calls)
	ft.mu.Unlock()
}

func TestFullClaimScansAgainAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) { c.ScanInterval = time.Hour; c.ClaimLimit = 2 })
	due := h.commit(t, 5, 3, "", 0)
	h.owned.Assign(3) // one scan, which must chain claims of 2, 2 and 1
	for _, m := range due {
		h.waitStatus(t, m, state.SendSent)
	}
}

// blockingClaims blocks the first ClaimSends until released.
type blockingClaims struct {
	*memstore.Store
	once             sync.Once
	entered, release chan struct{}
}

func (b *blockingClaims) ClaimSends(ctx context.Context, c store.Claim) ([]state.Message, error) {
	b.once.Do(func() {
		close(b.entered)
		<-b.release
	})
	return b.Store.ClaimSends(ctx, c)
}

func TestOwnershipChangeDuringAScanIsNotMissed(t *testing.T) {
	t.Parallel()
	st := &blockingClaims{Store: memstore.New(nil), entered: make(chan struct{}), release: make(chan struct{})}
	owned := ingest.NewOwnership()
	owned.Assign(0)
	ft := &fakeTarget{}
	f, err := forwarder.New(forwarder.Config{
		Targets: map[string]forwarder.Target{"x": ft}, ScanInterval: time.Hour,
		Logger: slog.New(slog.DiscardHandler),
	}, st, owned)
	require.NoError(t, err)
	require.NoError(t, f.Start(t.Context()))
	defer func() { require.NoError(t, f.Stop(context.Background())) }()
	req := commitReq("b", "k", 3)
	req.SendLease = 0
	_, err = st.Apply(t.Context(), req)
	require.NoError(t, err)
	<-st.entered // the first scan is claiming for partition 0
	owned.Assign(3)
	close(st.release)
	require.Eventually(t, func() bool { return len(ft.sentIDs()) == 1 }, 5*time.Second, time.Millisecond)
}

func TestSameForwardKeyKeepsHandoffOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) { c.Concurrency, c.BatchSize = 4, 3 })
	h.targets["main"].jitter = true
	msgs := h.commit(t, 400, 0, "", testLease)
	for i := range msgs {
		msgs[i].ForwardKey = fmt.Sprintf("user-%d", i%7)
		if i%10 == 0 {
			msgs[i].ForwardKey = "" // spread round robin
		}
	}
	for i := 0; i < len(msgs); i += 25 {
		h.f.Handoff(msgs[i : i+25])
	}
	require.Eventually(t, func() bool { return h.st.Count(state.SendSent) == 400 }, 10*time.Second, time.Millisecond)
	last := map[string]string{}
	order := map[string]int{}
	for i, m := range msgs {
		order[m.MessageID()] = i
	}
	workersUsed := map[string]bool{}
	for _, r := range h.targets["main"].sent() {
		if r.Key == "" {
			continue
		}
		workersUsed[r.Key] = true
		if prev, ok := last[r.Key]; ok {
			require.Less(t, order[prev], order[r.ID], "forward key %s: %s sent after %s", r.Key, r.ID, prev)
		}
		last[r.Key] = r.ID
	}
	require.Len(t, workersUsed, 7)
}

func TestDuplicateHandoffIsSentOnce(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	inSend := make(chan struct{}, 1)
	h := newHarness(t, func(c *forwarder.Config) { c.Concurrency = 1 })
	ft := h.targets["main"]
	ft.mu.Lock()
	ft.gate, ft.inSend = gate, inSend
	ft.mu.Unlock()
	first := h.commit(t, 1, 0, "", testLease)
	msgs := h.commit(t, 2, 0, "", testLease)
	h.f.Handoff(first)
	<-inSend
	h.f.Handoff(msgs)
	h.f.Handoff(msgs)  // a replay: already queued
	h.f.Handoff(first) // in flight
	close(gate)
	for _, m := range append(first, msgs...) {
		h.waitStatus(t, m, state.SendSent)
	}
	require.Equal(t, map[string]int{
		first[0].MessageID(): 1, msgs[0].MessageID(): 1, msgs[1].MessageID(): 1,
	}, ft.sentIDs())
}

func TestReclaimedWhileInFlightRecordsWithTheNewLease(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	inSend := make(chan struct{}, 1)
	h := newHarness(t, nil)
	ft := h.targets["main"]
	ft.mu.Lock()
	ft.gate, ft.inSend = gate, inSend
	ft.mu.Unlock()
	ft.setFail(func(forwarder.Record) error { return errBroker })
	msgs := h.commit(t, 1, 0, "", testLease)
	h.f.Handoff(msgs)
	<-inSend
	// The send outlives the lease; the scan claims the message again.
	claims := h.st.Calls().ClaimSends
	h.clock.Advance(testLease)
	require.Eventually(t, func() bool { return h.get(t, msgs[0]).LeaseToken != msgs[0].LeaseToken }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { c := h.st.Calls().ClaimSends; return c >= claims+2 }, 5*time.Second, time.Millisecond)
	close(gate)
	got := h.get(t, msgs[0])
	require.Eventually(t, func() bool { got = h.get(t, msgs[0]); return got.SendAttempts == 1 }, 5*time.Second, time.Millisecond,
		"the failure was dropped as stale")
	require.Equal(t, errBroker.Error(), got.LastError)
	ft.mu.Lock()
	require.Equal(t, 1, ft.calls, "the re-claimed copy was queued as well")
	ft.mu.Unlock()
}

// With the default breaker, an outage opens it only once failures have
// lasted 5s; the first probe comes 1s later and a failed probe doubles the
// pause.
func TestBreakerDefaultsOpenAfterFailuresLastAndDoubleThePause(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) {
		c.Concurrency, c.BatchSize = 1, 1
		c.Backoff = forwarder.Backoff{Base: 2 * time.Second, Cap: 2 * time.Second, Rand: func() float64 { return 0 }} // 1s
		c.MaxAttempts = 20
	})
	ft := h.targets["main"]
	ft.setFail(func(forwarder.Record) error { return errBroker })
	msgs := h.commit(t, 1, 0, "", testLease)
	h.f.Handoff(msgs)
	attempts := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return h.get(t, msgs[0]).SendAttempts == n }, 5*time.Second, time.Millisecond, "attempt %d: %+v", n, h.get(t, msgs[0]))
	}
	attempts(1)
	for n := 2; n <= 6; n++ { // a failure every second: open at the one 5s after the first
		require.Equal(t, 0.0, h.gauge(t, "eventcenter_forward_breaker_open", "target", "main"), "attempt %d", n)
		h.clock.Advance(time.Second)
		attempts(n)
	}
	require.Eventually(t, func() bool {
		return h.gauge(t, "eventcenter_forward_breaker_open", "target", "main") == 1
	}, 5*time.Second, time.Millisecond)

	h.clock.Advance(time.Second) // due, and the 1s cooldown is over: a failed probe
	attempts(7)
	h.clock.Advance(time.Second) // due, but the pause is now 2s
	require.Eventually(t, func() bool {
		return h.counter(t, "eventcenter_forward_total", "target", "main", "result", "deferred") >= 1
	}, 5*time.Second, time.Millisecond)
	require.Equal(t, 7, h.get(t, msgs[0]).SendAttempts)

	ft.setFail(nil)
	h.clock.Advance(testLease) // the deferred claim's lease ends; the pause too: a probe closes it
	h.waitStatus(t, msgs[0], state.SendSent)
	require.Equal(t, 0.0, h.gauge(t, "eventcenter_forward_breaker_open", "target", "main"))
}

// gatedHarness returns a harness with one worker, one-record batches and a
// queue of one, whose "main" target blocks in Send until gate is closed.
func gatedHarness(t *testing.T, mod func(*forwarder.Config)) (h *harness, gate, inSend chan struct{}) {
	t.Helper()
	gate, inSend = make(chan struct{}), make(chan struct{}, 1)
	h = newHarness(t, func(c *forwarder.Config) {
		c.QueueSize, c.Concurrency, c.BatchSize = 1, 1, 1
		if mod != nil {
			mod(c)
		}
	})
	ft := h.targets["main"]
	ft.mu.Lock()
	ft.gate, ft.inSend = gate, inSend
	ft.mu.Unlock()
	return h, gate, inSend
}

func TestHandoffWaitsForRoomAndDelivers(t *testing.T) {
	t.Parallel()
	h, gate, inSend := gatedHarness(t, func(c *forwarder.Config) { c.HandoffWait = 20 * time.Second })
	msgs := h.commit(t, 4, 0, "", testLease)
	h.f.Handoff(msgs[:1])
	<-inSend               // the worker holds msgs[0]
	h.f.Handoff(msgs[1:2]) // fills the queue
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		h.f.Handoff(msgs[2:]) // no room: waits
	}()
	require.Never(t, func() bool {
		select {
		case <-returned:
			return true
		default:
			return false
		}
	}, 100*time.Millisecond, 5*time.Millisecond, "Handoff returned while the queue was full")
	close(gate)
	<-returned
	require.Eventually(t, func() bool { return h.st.Count(state.SendSent) == 4 }, 5*time.Second, time.Millisecond)
	require.Equal(t, 0.0, h.counter(t, "eventcenter_forward_handoff_dropped_total"))
	require.Equal(t, map[string]int{
		msgs[0].MessageID(): 1, msgs[1].MessageID(): 1, msgs[2].MessageID(): 1, msgs[3].MessageID(): 1,
	}, h.targets["main"].sentIDs())
}

func TestHandoffDropsWhenTheWaitExpires(t *testing.T) {
	t.Parallel()
	const wait = 50 * time.Millisecond
	h, gate, inSend := gatedHarness(t, func(c *forwarder.Config) { c.HandoffWait = wait; oneTarget(c) })
	msgs := h.commit(t, 4, 0, "", testLease)
	h.f.Handoff(msgs[:1])
	<-inSend
	h.f.Handoff(msgs[1:2])
	began := time.Now()
	h.f.Handoff(msgs[2:]) // both wait in one budget, then drop
	took := time.Since(began)
	require.GreaterOrEqual(t, took, wait)
	require.Less(t, took, 2*time.Second, "the wait is per Handoff call, not per message")
	require.Equal(t, 2.0, h.counter(t, "eventcenter_forward_handoff_dropped_total"))
	// Their leases are released: due now, not after the lease.
	require.Eventually(t, func() bool {
		return h.counter(t, "eventcenter_forward_handoff_released_total") == 2
	}, 5*time.Second, time.Millisecond)
	for _, m := range msgs[2:] {
		got := h.get(t, m)
		require.Equal(t, state.SendPending, got.SendStatus)
		require.False(t, got.SendNextAt.After(h.clock.Now()), "due now")
	}
	close(gate)
	// All four are sent on a clock that never reaches the lease.
	require.Eventually(t, func() bool { return h.st.Count(state.SendSent) == 4 }, 5*time.Second, time.Millisecond)
	require.Equal(t, map[string]int{
		msgs[0].MessageID(): 1, msgs[1].MessageID(): 1, msgs[2].MessageID(): 1, msgs[3].MessageID(): 1,
	}, h.targets["main"].sentIDs())
}

// oneTarget keeps only the target "main". (With several, a scan claims up
// to the room of the roomiest queue, so it may claim released messages
// while their own target's queue is still full; those wait for their lease
// like any claimed message that finds no room.)
func oneTarget(c *forwarder.Config) {
	c.Targets = map[string]forwarder.Target{"main": c.Targets["main"]}
}

// A burst larger than the forwarder's queues is sent at the forwarder's
// pace: what the handoff could not queue is released and claimed by the
// scan, not left until its lease runs out (else a burst's messages wait the
// 30 s lease: a p99 of tens of seconds).
func TestBurstLargerThanTheQueueIsNotLeftToTheLease(t *testing.T) {
	t.Parallel()
	h, gate, inSend := gatedHarness(t, func(c *forwarder.Config) {
		c.QueueSize, c.Concurrency, c.BatchSize = 10, 2, 4
		c.HandoffWait = -1 // no wait: what finds no room is dropped at once
		oneTarget(c)
	})
	msgs := h.commit(t, 100, 0, "", testLease)
	h.f.Handoff(msgs[:1])
	<-inSend // a worker holds the first; the queues fill up behind it
	h.f.Handoff(msgs[1:])
	dropped := h.counter(t, "eventcenter_forward_handoff_dropped_total")
	require.GreaterOrEqual(t, dropped, 80.0, "most of the burst found no room")
	close(gate)
	require.Eventually(t, func() bool { return h.st.Count(state.SendSent) == 100 }, 10*time.Second, time.Millisecond,
		"sent without the clock reaching the lease")
	// (The scan's claims may find a full shard too: those are released as
	// well, so there may be more releases than handoffs dropped.)
	require.GreaterOrEqual(t, h.counter(t, "eventcenter_forward_handoff_released_total"), dropped)
	ids := h.targets["main"].sentIDs()
	require.Len(t, ids, 100)
	for id, n := range ids {
		require.Equal(t, 1, n, "%s sent twice", id)
	}
}

// A release that the store refuses is retried with the sent marks; a
// release for a row whose lease was taken over since (another token) is
// ignored, and that row keeps the newer lease.
func TestReleaseOfADroppedHandoffRetriesAndRespectsNewerLeases(t *testing.T) {
	t.Parallel()
	h, gate, inSend := gatedHarness(t, func(c *forwarder.Config) { c.HandoffWait = -1; oneTarget(c) })
	msgs := h.commit(t, 4, 0, "", testLease)
	h.f.Handoff(msgs[:1])
	<-inSend
	h.f.Handoff(msgs[1:2]) // fills the queue
	h.st.FailApply(errors.New("db down"), errors.New("db down"))
	stale := msgs[3]
	stale.LeaseToken++ // as if another claim had leased it since
	h.f.Handoff([]state.Message{msgs[2], stale})
	require.Equal(t, 2.0, h.counter(t, "eventcenter_forward_handoff_dropped_total"))
	require.Eventually(t, func() bool {
		return h.counter(t, "eventcenter_forward_handoff_released_total") == 1
	}, 5*time.Second, time.Millisecond, "released after the store came back")
	require.False(t, h.get(t, msgs[2]).SendNextAt.After(h.clock.Now()), "due now")
	require.Equal(t, msgs[3].SendNextAt, h.get(t, msgs[3]).SendNextAt, "the newer lease is kept")
	close(gate)
	require.Eventually(t, func() bool { return h.st.Count(state.SendSent) == 3 }, 5*time.Second, time.Millisecond)
	h.clock.Advance(testLease)
	require.Eventually(t, func() bool { return h.st.Count(state.SendSent) == 4 }, 5*time.Second, time.Millisecond,
		"the other one after its lease")
}

func TestStopUnblocksAWaitingHandoff(t *testing.T) {
	t.Parallel()
	h, gate, inSend := gatedHarness(t, func(c *forwarder.Config) { c.HandoffWait = 20 * time.Second })
	msgs := h.commit(t, 3, 0, "", testLease)
	h.f.Handoff(msgs[:1])
	<-inSend
	h.f.Handoff(msgs[1:2])
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		h.f.Handoff(msgs[2:])
	}()
	// Waiting (not dropped because Stop came first).
	require.Never(t, func() bool {
		select {
		case <-returned:
			return true
		default:
			return false
		}
	}, 100*time.Millisecond, 5*time.Millisecond, "Handoff returned while the queue was full")
	stopped := make(chan error, 1)
	go func() { stopped <- h.f.Stop(t.Context()) }()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("Handoff still waiting after Stop")
	}
	require.Equal(t, 1.0, h.counter(t, "eventcenter_forward_handoff_dropped_total"))
	close(gate) // the worker finishes what it holds and what is queued
	require.NoError(t, <-stopped)
	require.Equal(t, 2, h.st.Count(state.SendSent))
	require.Equal(t, 0.0, h.counter(t, "eventcenter_forward_handoff_released_total"), "stopping: left to its lease")
	require.Equal(t, msgs[2].SendNextAt, h.get(t, msgs[2]).SendNextAt)
}

func TestHandoffDropsAtOnceWhileTheBreakerIsOpen(t *testing.T) {
	t.Parallel()
	h, gate, inSend := gatedHarness(t, func(c *forwarder.Config) {
		c.HandoffWait = 20 * time.Second
		c.Breaker = forwarder.Breaker{Failures: 1, FailingFor: -1, Cooldown: 10 * time.Second}
		// msgs[0]'s retry falls due after 20s, past the cooldown this test
		// waits out, so no scan claims it while the probe is held.
		c.Backoff = forwarder.Backoff{Base: 20 * time.Second, Cap: 20 * time.Second, Rand: func() float64 { return 1 }}
	})
	ft := h.targets["main"]
	ft.mu.Lock()
	ft.gate = nil // the first send fails at once and opens the breaker
	ft.mu.Unlock()
	ft.setFail(func(forwarder.Record) error { return errBroker })
	msgs := h.commit(t, 4, 0, "", testLease)
	h.f.Handoff(msgs[:1])
	require.Eventually(t, func() bool {
		return h.gauge(t, "eventcenter_forward_breaker_open", "target", "main") == 1
	}, 5*time.Second, time.Millisecond)
	<-inSend
	// Cooldown over: the next batch is the probe, held in Send.
	h.clock.Advance(10 * time.Second)
	ft.mu.Lock()
	ft.gate = gate
	ft.mu.Unlock()
	h.f.Handoff(msgs[1:2])
	<-inSend
	h.f.Handoff(msgs[2:3]) // fills the queue
	began := time.Now()
	h.f.Handoff(msgs[3:])
	require.Less(t, time.Since(began), time.Second, "Handoff waited for a paused target")
	require.Equal(t, 1.0, h.counter(t, "eventcenter_forward_handoff_dropped_total"))
	require.Equal(t, 0.0, h.counter(t, "eventcenter_forward_handoff_released_total"), "a paused target: the lease is the pause")
	close(gate)
}

// DefaultConfig holds the constant defaults and leaves the derived ones
// to New; Validate checks a Config after defaults, so a field a setting
// made 0 is refused, named, while the derived ones may stay 0.
func TestDefaultConfigAndValidate(t *testing.T) {
	t.Parallel()
	targets := map[string]forwarder.Target{"a": &fakeTarget{}}
	d := forwarder.DefaultConfig()
	require.Equal(t, forwarder.DefaultMaxAttempts, d.MaxAttempts)
	require.Equal(t, forwarder.DefaultLease, d.Lease)
	require.Equal(t, forwarder.DefaultSendTimeout, d.SendTimeout)
	require.Equal(t, forwarder.DefaultInlineTimeout, d.InlineTimeout)
	require.Equal(t, forwarder.DefaultScanInterval, d.ScanInterval)
	require.Zero(t, d.BusyScanInterval, "derived from ScanInterval by New")
	require.Zero(t, d.HandoffWait, "derived from Lease by New")
	d.Targets = targets
	require.NoError(t, d.Validate())
	require.NoError(t, forwarder.Config{Targets: targets}.WithDefaults().Validate(), "a zero Config takes the defaults")

	// Derived from what was set, as New derives them.
	w := forwarder.Config{Targets: targets, ScanInterval: 20 * time.Millisecond, Lease: 2 * time.Second, SendTimeout: time.Second, InlineTimeout: -1}.WithDefaults()
	require.Equal(t, 20*time.Millisecond, w.BusyScanInterval)
	require.Equal(t, time.Second, w.HandoffWait)
	require.Equal(t, "a", w.DefaultTarget)

	for field, zero := range map[string]func(*forwarder.Config){
		"MaxAttempts":   func(c *forwarder.Config) { c.MaxAttempts = 0 },
		"ScanInterval":  func(c *forwarder.Config) { c.ScanInterval = 0 },
		"Lease":         func(c *forwarder.Config) { c.Lease = 0 },
		"SendTimeout":   func(c *forwarder.Config) { c.SendTimeout = 0 },
		"InlineTimeout": func(c *forwarder.Config) { c.InlineTimeout = 0 },
		"Backoff.Base":  func(c *forwarder.Config) { c.Backoff.Base = 0 },
	} {
		c := forwarder.DefaultConfig()
		c.Targets = targets
		zero(&c)
		problems, others := fieldcheck.Problems(c.Validate())
		require.Empty(t, others, field)
		require.NotEmpty(t, problems, "%s: 0 is refused", field)
		require.Equal(t, field, problems[0].Field)
	}
}
