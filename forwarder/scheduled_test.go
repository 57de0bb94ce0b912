package forwarder_test

import (
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

// TestBusyScanFollowsMessagesFallingDue: after a scan that claimed
// something the next comes after BusyScanInterval, not ScanInterval, so a
// stream of messages falling due (scheduled ones) is not held a whole
// interval; after a scan that claimed nothing the interval is
// ScanInterval again.
func TestBusyScanFollowsMessagesFallingDue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) { c.ScanInterval, c.BusyScanInterval = time.Hour, 20*time.Millisecond })
	require.Eventually(t, func() bool { return h.st.Calls().ClaimSends >= 1 }, 5*time.Second, time.Millisecond, "the first scan")

	// Due now, left to the scan: the ownership change scans at once.
	first := h.commit(t, 1, 0, "main", 0)[0]
	h.owned.Assign(1)
	h.waitStatus(t, first, state.SendSent)
	// It claimed one: the next scan comes soon and takes one more.
	second := h.commit(t, 1, 0, "main", 0)[0]
	h.waitStatus(t, second, state.SendSent)

	// Then a scan claims nothing, and the next is an hour away.
	require.Eventually(t, func() bool {
		claims := h.st.Calls().ClaimSends
		time.Sleep(100 * time.Millisecond) // five busy intervals without a claim
		return h.st.Calls().ClaimSends == claims
	}, 5*time.Second, time.Millisecond, "the scans stop after one that claimed nothing")
	third := h.commit(t, 1, 0, "main", 0)[0]
	time.Sleep(200 * time.Millisecond) // ten busy intervals
	require.Equal(t, state.SendPending, h.get(t, third).SendStatus, "idle: no scan before ScanInterval")
}
