package forwarder_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// A message that becomes sendable is sent inside the Apply and written
// once, already sent: no lease, no handoff, no sent-mark write.
func TestInlineSendWritesTheMessageSentOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	res, err := h.f.Applier(h.st).Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(h.clock.Now(), "k1", "k2")})
	require.NoError(t, err)
	require.Empty(t, res.Sendable, "nothing left to hand over")
	require.Len(t, res.Forwarded, 2)
	require.Len(t, h.targets["main"].sent(), 2)
	for _, k := range []string{"k1", "k2"} {
		m, err := h.st.Get(t.Context(), "b", k)
		require.NoError(t, err)
		require.Equal(t, state.SendSent, m.SendStatus, k)
		require.Contains(t, []string{"fake/1", "fake/2"}, m.SendRef, k)
		require.Equal(t, h.clock.Now(), m.SentAt, k)
	}
	require.Zero(t, h.st.Calls().MarkSent, "written sent by the Apply itself")
	require.Equal(t, 2.0, h.counter(t, "eventcenter_forward_inline_total", "target", "main", "result", "sent"))
	require.Equal(t, 2.0, h.counter(t, "eventcenter_forward_total", "target", "main", "result", "sent"))
	require.Equal(t, uint64(2), h.histCount(t, "eventcenter_commit_to_sent_seconds"))
	// A replay is a no-op: nothing is sent again.
	_, err = h.f.Applier(h.st).Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(h.clock.Now(), "k1", "k2")})
	require.NoError(t, err)
	require.Len(t, h.targets["main"].sent(), 2)
}

// An inline send that fails costs the message no attempt: it is written
// leased and handed over, and the regular path sends it.
func TestInlineFailureGoesTheRegularWay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	var calls atomic.Int32
	h.targets["main"].setFail(func(forwarder.Record) error {
		if calls.Add(1) == 1 {
			return errors.New("broker hiccup")
		}
		return nil
	})
	res, err := h.f.Applier(h.st).Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(h.clock.Now(), "k")})
	require.NoError(t, err)
	require.Empty(t, res.Forwarded)
	require.Len(t, res.Sendable, 1)
	require.Equal(t, h.clock.Now().Add(testLease), res.Sendable[0].SendNextAt, "written leased")
	m := h.waitStatus(t, res.Sendable[0], state.SendSent)
	require.Zero(t, m.SendAttempts, "the inline failure was not counted")
	require.Len(t, h.targets["main"].sent(), 1)
	require.Equal(t, 1.0, h.counter(t, "eventcenter_forward_inline_total", "target", "main", "result", "not_sent"))
}

// What the forwarder must not send here is left to the regular path: a
// partition it does not own, a target whose breaker is open.
func TestInlineLeavesUnownedPartitionsAndOpenBreakers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) {
		c.Breaker = forwarder.Breaker{Failures: 1, FailingFor: -1, Cooldown: time.Hour}
	})
	cs := commitChanges(h.clock.Now(), "elsewhere")
	for i := range cs {
		cs[i].Partition = 7 // not owned
	}
	res, err := h.f.Applier(h.st).Apply(t.Context(), store.ApplyRequest{Changes: cs})
	require.NoError(t, err)
	require.Empty(t, res.Forwarded)
	require.Len(t, res.Sendable, 1)
	require.Empty(t, h.targets["main"].sent())

	// One failed inline round opens the breaker (Failures 1); then nothing
	// is tried inline.
	h.targets["main"].setFail(func(forwarder.Record) error { return errors.New("down") })
	_, err = h.f.Applier(h.st).Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(h.clock.Now(), "a")})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return h.gauge(t, "eventcenter_forward_breaker_open", "target", "main") == 1 },
		5*time.Second, time.Millisecond)
	tried := h.counter(t, "eventcenter_forward_inline_total", "target", "main", "result", "not_sent")
	h.targets["main"].setFail(nil)
	res, err = h.f.Applier(h.st).Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(h.clock.Now(), "b")})
	require.NoError(t, err)
	require.Empty(t, res.Forwarded)
	require.Equal(t, tried, h.counter(t, "eventcenter_forward_inline_total", "target", "main", "result", "not_sent"), "not tried")
	require.Empty(t, h.targets["main"].sent())
}

// InlineTimeout bounds how long an Apply (and the row locks it holds) waits
// for a target that does not answer.
func TestInlineTimeoutBoundsTheWait(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) { c.InlineTimeout = 50 * time.Millisecond })
	gate := make(chan struct{})
	h.targets["main"].mu.Lock()
	h.targets["main"].gate = gate
	h.targets["main"].mu.Unlock()
	began := time.Now()
	res, err := h.f.Applier(h.st).Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(h.clock.Now(), "k")})
	require.NoError(t, err)
	require.Less(t, time.Since(began), 4*time.Second, "bounded by InlineTimeout, not SendTimeout (5s)")
	require.Empty(t, res.Forwarded)
	require.Len(t, res.Sendable, 1)
	close(gate)
	h.waitStatus(t, res.Sendable[0], state.SendSent)
}

// A store that retries its transaction offers the same messages again; what
// was sent in the first try is reported sent without sending it twice.
func TestInlineRetriedTransactionSendsOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	st := &retryingStore{h: h}
	res, err := h.f.Applier(st).Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(h.clock.Now(), "k")})
	require.NoError(t, err)
	require.Equal(t, 2, st.tries)
	require.Len(t, res.Forwarded, 1)
	require.Len(t, h.targets["main"].sent(), 1, "sent in the first try only")
	m, err := h.st.Get(t.Context(), "b", "k")
	require.NoError(t, err)
	require.Equal(t, state.SendSent, m.SendStatus)
	require.Equal(t, "fake/1", m.SendRef, "the first try's reference")
}

// retryingStore runs Forward as a first try whose write fails, then applies
// for real, as a store does after a serialization failure.
type retryingStore struct {
	h     *harness
	tries int
}

func (s *retryingStore) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	s.tries++
	probe := state.Message{BizID: "b", Key: "k", Status: state.Committed, HasBody: true, Payload: []byte("p"), Topic: "t"}
	if got := req.Forward(ctx, []state.Message{probe}); !got[0].Sent {
		return store.ApplyResult{}, errors.New("first try: not sent")
	}
	s.tries++
	return s.h.st.Apply(ctx, req)
}

func TestInlineTimeoutMustBeShorterThanTheLease(t *testing.T) {
	t.Parallel()
	_, err := forwarder.New(forwarder.Config{
		Targets: map[string]forwarder.Target{"main": &fakeTarget{}}, Lease: time.Second, SendTimeout: 500 * time.Millisecond,
		InlineTimeout: time.Second,
	}, memStore{}, ingest.NewOwnership())
	require.ErrorContains(t, err, "InlineTimeout: must be shorter than Lease (1s)")
}

// A transaction that fails after its inline send wrote nothing: the caller
// (ingest, before committing offsets) replays the change and the message is
// sent again and written sent. At least once: never lost.
func TestInlineSendOfAFailedTransactionIsSentAgainOnReplay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	st := &rolledBackOnce{h: h}
	a := h.f.Applier(st)
	_, err := a.Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(h.clock.Now(), "k")})
	require.ErrorContains(t, err, "commit failed")
	require.Len(t, h.targets["main"].sent(), 1, "sent before the failed commit")
	_, err = h.st.Get(t.Context(), "b", "k")
	require.ErrorIs(t, err, store.ErrNotFound, "nothing written")

	res, err := a.Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(h.clock.Now(), "k")})
	require.NoError(t, err)
	require.Len(t, res.Forwarded, 1)
	require.Len(t, h.targets["main"].sent(), 2, "sent again on replay")
	m, err := h.st.Get(t.Context(), "b", "k")
	require.NoError(t, err)
	require.Equal(t, state.SendSent, m.SendStatus)
}

// rolledBackOnce fails its first Apply after the inline send, as a commit
// that fails does; later ones apply to the harness store.
type rolledBackOnce struct {
	h      *harness
	failed bool
}

func (s *rolledBackOnce) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	if s.failed {
		return s.h.st.Apply(ctx, req)
	}
	s.failed = true
	m := state.Message{BizID: "b", Key: "k", Status: state.Committed, HasBody: true, Payload: []byte("p"), Topic: "t"}
	req.Forward(ctx, []state.Message{m})
	return store.ApplyResult{}, errors.New("commit failed")
}
