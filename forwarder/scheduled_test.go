package forwarder_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// TestScheduledSentAtItsTime: a committed message with a deliver-at is
// not sent by the scan before it, is sent once it is due, and its
// lateness (ack − deliver-at) is observed; a cancelled one is never sent.
func TestScheduledSentAtItsTime(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	at := h.clock.Now()
	deliverAt := at.Add(time.Minute)
	var changes []store.Change
	for _, key := range []string{"later", "cancelled"} {
		changes = append(changes,
			store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindPrepare, At: at, Body: &state.Body{
				Payload: []byte("p"), Topic: "biz-topic", CheckAfter: time.Minute, DeliverAt: deliverAt}}},
			store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindCommit, At: at}})
	}
	changes = append(changes, store.Change{BizID: "shop", Key: "cancelled", Event: state.Event{Kind: state.KindCancel, At: at}})
	res, err := h.st.Apply(t.Context(), store.ApplyRequest{Changes: changes})
	require.NoError(t, err)
	require.Empty(t, res.Sendable, "not due: nothing to hand over")
	later, err := h.st.Get(t.Context(), "shop", "later")
	require.NoError(t, err)

	claims := h.st.Calls().ClaimSends
	require.Eventually(t, func() bool { return h.st.Calls().ClaimSends >= claims+3 }, 5*time.Second, time.Millisecond)
	require.Empty(t, h.targets["main"].sentIDs(), "sent before its deliver-at")
	require.Zero(t, h.histCount(t, "eventcenter_delivery_lateness_seconds"))

	h.clock.Advance(time.Minute + 250*time.Millisecond)
	h.waitStatus(t, later, state.SendSent)
	require.Len(t, h.targets["main"].sentIDs(), 1, "the cancelled one never")
	require.Equal(t, uint64(1), h.histCount(t, "eventcenter_delivery_lateness_seconds"))
	c, err := h.st.Get(t.Context(), "shop", "cancelled")
	require.NoError(t, err)
	require.Equal(t, state.Cancelled, c.Status)
}

// steppedClaims holds each scan's claim until the test lets it go: scans
// tells that a scan is about to claim (and waits for go), claimed how
// many it then claimed.
type steppedClaims struct {
	forwarder.Store
	done    <-chan struct{} // the test's end: claims pass
	scans   chan struct{}
	proceed chan struct{}
	claimed chan int
}

func (s *steppedClaims) ClaimSends(ctx context.Context, c store.Claim) ([]state.Message, error) {
	select {
	case s.scans <- struct{}{}:
	case <-s.done:
		return s.Store.ClaimSends(ctx, c)
	}
	select {
	case <-s.proceed:
	case <-s.done:
	}
	msgs, err := s.Store.ClaimSends(ctx, c)
	select {
	case s.claimed <- len(msgs):
	case <-s.done:
	}
	return msgs, err
}

// nextScan waits for the forwarder's next scan to begin its claim, with a
// safety bound far beyond BusyScanInterval and far below ScanInterval.
func (s *steppedClaims) nextScan(t *testing.T, what string) {
	t.Helper()
	select {
	case <-s.scans:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no scan came: "+what)
	}
}

// claim lets the scan nextScan saw claim, and returns how many it claimed.
func (s *steppedClaims) claim() int {
	s.proceed <- struct{}{}
	return <-s.claimed
}

// TestBusyScanFollowsMessagesFallingDue: after a scan that claimed
// something the next comes after BusyScanInterval, not ScanInterval, so a
// stream of messages falling due (scheduled ones) is not held a whole
// interval; after a scan that claimed nothing the interval is
// ScanInterval again. The test takes the scans one at a time, so that
// what each one finds does not depend on how fast the machine runs.
func TestBusyScanFollowsMessagesFallingDue(t *testing.T) {
	t.Parallel()
	var st *steppedClaims
	h := newHarnessWith(t, func(c *forwarder.Config) { c.ScanInterval, c.BusyScanInterval = time.Hour, 20*time.Millisecond },
		func(s forwarder.Store) forwarder.Store {
			st = &steppedClaims{Store: s, done: t.Context().Done(), scans: make(chan struct{}), proceed: make(chan struct{}), claimed: make(chan int)}
			return st
		})
	st.nextScan(t, "the first scan")
	require.Zero(t, st.claim(), "nothing due yet")

	// Due now, left to the scan: the ownership change scans at once.
	first := h.commit(t, 1, 0, "main", 0)[0]
	h.owned.Assign(1)
	st.nextScan(t, "the ownership change's")
	require.Equal(t, 1, st.claim())
	h.waitStatus(t, first, state.SendSent)
	// It claimed one: the next scan comes soon and takes what fell due
	// meanwhile.
	st.nextScan(t, "a busy interval after a scan that claimed")
	second := h.commit(t, 1, 0, "main", 0)[0]
	require.Equal(t, 1, st.claim())
	h.waitStatus(t, second, state.SendSent)

	// Then a scan claims nothing, and the next is an hour away.
	st.nextScan(t, "a busy interval after a scan that claimed")
	require.Zero(t, st.claim())
	third := h.commit(t, 1, 0, "main", 0)[0]
	select {
	case <-st.scans:
		require.Fail(t, "a scan within ScanInterval after one that claimed nothing")
	case <-time.After(200 * time.Millisecond): // ten busy intervals
	}
	require.Equal(t, state.SendPending, h.get(t, third).SendStatus, "idle: no scan before ScanInterval")
}
