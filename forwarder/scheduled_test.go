package forwarder_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
