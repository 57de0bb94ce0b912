package forwarder_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

var errBusy = errors.New("CODE: 2, DESC: [TIMEOUT_CLEAN_QUEUE]broker busy")

// sendLog records when Send was called.
type sendLog struct {
	mu    sync.Mutex
	calls []time.Time
}

func (s *sendLog) add() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, time.Now())
}

func (s *sendLog) times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.calls...)
}

// A target answering busy (RocketMQ flow control) is paused, its messages
// are put off without spending an attempt (MaxAttempts 1 would make them
// DEAD), and it recovers when the answers clear: every message is sent
// once.
func TestBusyTargetIsPausedWithoutSpendingAttempts(t *testing.T) {
	t.Parallel()
	var busy atomic.Bool
	busy.Store(true)
	var log sendLog
	h := newHarness(t, func(c *forwarder.Config) { c.MaxAttempts = 1 })
	h.targets["main"].setFail(func(forwarder.Record) error {
		log.add()
		if busy.Load() {
			return forwarder.Throttled(errBusy)
		}
		return nil
	})
	// One message: each batch answered busy after a pause doubles it.
	msgs := h.commit(t, 1, 0, "", testLease)
	t0 := h.clock.Now()
	h.f.Handoff(msgs)
	for _, m := range msgs {
		var got state.Message
		require.Eventually(t, func() bool {
			got = h.get(t, m)
			return got.SendNextAt.Equal(t0.Add(100 * time.Millisecond))
		}, 5*time.Second, time.Millisecond, "put off by the first pause; last %+v", &got)
		require.Zero(t, got.SendAttempts, "no attempt spent")
		require.Equal(t, state.SendPending, got.SendStatus)
	}
	require.Equal(t, 1.0, h.counter(t, "eventcenter_forward_target_throttled_total", "target", "main", "cause", "busy"))
	require.InDelta(t, 0.1, h.gauge(t, "eventcenter_forward_target_throttle_seconds", "target", "main"), 1e-9)
	ts := h.f.TargetStatus()
	require.Len(t, ts, 2)
	require.Equal(t, "main", ts[0].Target)
	require.Equal(t, forwarder.TargetStatus{Target: "other"}, ts[1], "never paused")
	require.Equal(t, "busy", ts[0].Cause, "the operator's view says why")
	require.Equal(t, 100*time.Millisecond, ts[0].Pause)
	require.False(t, ts[0].Since.IsZero())

	// Still busy: the pause doubles, and the next send waits for it.
	h.clock.Advance(100 * time.Millisecond)
	require.Eventually(t, func() bool {
		return h.counter(t, "eventcenter_forward_target_throttled_total", "target", "main", "cause", "busy") == 2
	}, 5*time.Second, time.Millisecond)
	require.InDelta(t, 0.2, h.gauge(t, "eventcenter_forward_target_throttle_seconds", "target", "main"), 1e-9)
	calls := log.times()
	require.GreaterOrEqual(t, calls[len(calls)-1].Sub(calls[0]), 90*time.Millisecond, "the second batch waited for the pause")

	// The broker recovers: everything goes through once, no attempt spent.
	busy.Store(false)
	h.clock.Advance(200 * time.Millisecond)
	more := h.commit(t, 2, 0, "", testLease)
	h.f.Handoff(more)
	msgs = append(msgs, more...)
	for _, m := range msgs {
		got := h.waitStatus(t, m, state.SendSent)
		require.Zero(t, got.SendAttempts)
	}
	require.Len(t, h.targets["main"].sentIDs(), 3)
	require.Eventually(t, func() bool {
		return h.gauge(t, "eventcenter_forward_target_throttle_seconds", "target", "main") == 0
	}, 5*time.Second, time.Millisecond, "the gauge clears once a batch went through")
	require.Zero(t, h.counter(t, "eventcenter_forward_total", "target", "main", "result", "retry"))
}

// throttlingTarget is a fake target that is a forwarder.ThrottleSource.
type throttlingTarget struct {
	fakeTarget
	fn  atomic.Pointer[func(time.Duration)]
	log sendLog
}

func (tt *throttlingTarget) OnThrottle(fn func(time.Duration)) { tt.fn.Store(&fn) }

func (tt *throttlingTarget) Send(ctx context.Context, recs []forwarder.Record) []forwarder.Result {
	tt.log.add()
	return tt.fakeTarget.Send(ctx, recs)
}

// A broker's throttle_time_ms (reported through ThrottleSource) holds the
// target's next batch for that long; nothing fails.
func TestBrokerThrottleHoldsTheNextBatch(t *testing.T) {
	t.Parallel()
	tt := &throttlingTarget{}
	h := newHarness(t, func(c *forwarder.Config) {
		c.Targets["main"] = tt
		c.MaxAttempts = 1
	})
	fn := tt.fn.Load()
	require.NotNil(t, fn, "the forwarder registered with the target")
	msgs := h.commit(t, 1, 0, "", testLease)
	h.f.Handoff(msgs)
	h.waitStatus(t, msgs[0], state.SendSent)

	throttledAt := time.Now()
	(*fn)(300 * time.Millisecond)
	require.Equal(t, 1.0, h.counter(t, "eventcenter_forward_target_throttled_total", "target", "main", "cause", "broker_throttle"))
	require.InDelta(t, 0.3, h.gauge(t, "eventcenter_forward_target_throttle_seconds", "target", "main"), 1e-9)
	ts := h.f.TargetStatus()
	require.Equal(t, "main", ts[0].Target)
	require.True(t, ts[0].Paused, "paused by the broker")
	require.Equal(t, "broker_throttle", ts[0].Cause)
	require.Equal(t, 300*time.Millisecond, ts[0].Pause)
	require.Greater(t, ts[0].Left, time.Duration(0))
	require.LessOrEqual(t, ts[0].Left, 300*time.Millisecond)
	more := h.commit(t, 2, 0, "", testLease)
	h.f.Handoff(more)
	for _, m := range more {
		got := h.waitStatus(t, m, state.SendSent)
		require.Zero(t, got.SendAttempts)
	}
	calls := tt.log.times()
	require.GreaterOrEqual(t, len(calls), 2)
	for _, c := range calls[1:] {
		require.GreaterOrEqual(t, c.Sub(throttledAt), 290*time.Millisecond, "held for the throttle")
	}
	require.Zero(t, h.gauge(t, "eventcenter_forward_target_throttle_seconds", "target", "main"))
	ts = h.f.TargetStatus()
	require.False(t, ts[0].Paused, "the pause is over")
	require.Zero(t, ts[0].Left)
	require.Equal(t, "broker_throttle", ts[0].Cause, "the last cause stays shown")
}

// While a target is paused, messages are not sent inline (in the store's
// transaction) but left to the lane, which waits for the pause; a busy
// answer to an inline send pauses the target too, and is not a failure.
func TestInlineSendsRespectTheThrottle(t *testing.T) {
	t.Parallel()
	tt := &throttlingTarget{}
	h := newHarness(t, func(c *forwarder.Config) {
		c.Targets["main"] = tt
		c.MaxAttempts = 1
	})
	(*tt.fn.Load())(time.Hour)
	res, err := h.f.Applier(h.st).Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(h.clock.Now(), "k1")})
	require.NoError(t, err)
	require.Empty(t, res.Forwarded, "not sent inline while paused")
	require.Empty(t, tt.log.times(), "nothing sent while paused")
	h.f.Handoff(res.Sendable) // queued: the lane waits for the pause
	stopCtx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	require.NoError(t, h.f.Stop(stopCtx), "a paused target does not hold up a stop")

	h2 := newHarness(t, func(c *forwarder.Config) { c.MaxAttempts = 1 })
	var busy atomic.Bool
	busy.Store(true)
	h2.targets["main"].setFail(func(forwarder.Record) error {
		if busy.Swap(false) {
			return forwarder.Throttled(errBusy)
		}
		return nil
	})
	res, err = h2.f.Applier(h2.st).Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(h2.clock.Now(), "k1")})
	require.NoError(t, err)
	require.Empty(t, res.Forwarded)
	require.Equal(t, 1.0, h2.counter(t, "eventcenter_forward_target_throttled_total", "target", "main", "cause", "busy"))
	m := h2.waitStatus(t, res.Sendable[0], state.SendSent)
	require.Zero(t, m.SendAttempts)
	require.Zero(t, h2.gauge(t, "eventcenter_forward_breaker_open", "target", "main"))
}
