package forwarder_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/memstore"
)

// recorder is a Handoff that records what it is given.
type recorder struct{ got []state.Message }

func (r *recorder) Handoff(msgs []state.Message) { r.got = append(r.got, msgs...) }

func commitChanges(now time.Time, keys ...string) []store.Change {
	var cs []store.Change
	for _, k := range keys {
		cs = append(cs,
			store.Change{BizID: "b", Key: k, Event: state.Event{Kind: state.KindPrepare, At: now,
				Body: &state.Body{Payload: []byte("p"), Topic: "t"}}},
			store.Change{BizID: "b", Key: k, Event: state.Event{Kind: state.KindCommit, At: now}})
	}
	return cs
}

func TestApplierLeasesAndHandsOffAfterCommit(t *testing.T) {
	t.Parallel()
	clk := newClock()
	st := memstore.New(clk.Now)
	rec := &recorder{}
	a := forwarder.NewApplier(st, rec, 42*time.Second)
	require.True(t, a.HandsOff())

	res, err := a.Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(clk.Now(), "k1", "k2"), SendLease: time.Hour})
	require.NoError(t, err)
	require.Len(t, res.Sendable, 2)
	require.Len(t, rec.got, 2, "sendable rows handed over")
	for _, m := range rec.got {
		require.Equal(t, clk.Now().Add(42*time.Second), m.SendNextAt, "leased for the Applier's lease, whatever the caller asked")
		require.NotZero(t, m.LeaseToken)
	}

	// Nothing newly sendable: nothing handed over.
	_, err = a.Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(clk.Now(), "k1")})
	require.NoError(t, err)
	require.Len(t, rec.got, 2)

	// A failed apply hands nothing over.
	st.FailApply(errors.New("db down"))
	_, err = a.Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(clk.Now(), "k3")})
	require.ErrorContains(t, err, "db down")
	require.Len(t, rec.got, 2)
}

func TestApplierWithoutHandoffLeavesRowsToTheScan(t *testing.T) {
	t.Parallel()
	clk := newClock()
	st := memstore.New(clk.Now)
	a := forwarder.NewApplier(st, nil, time.Minute)
	require.False(t, a.HandsOff())
	res, err := a.Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(clk.Now(), "k"), SendLease: time.Minute})
	require.NoError(t, err)
	require.Len(t, res.Sendable, 1)
	m, err := st.Get(t.Context(), "b", "k")
	require.NoError(t, err)
	require.False(t, m.SendNextAt.After(clk.Now()), "not leased: due for the next scan")
}

// The fast path into a forwarder uses its Lease (forward.lease): one lease
// setting for ingest, check-back answers and operator actions.
func TestForwarderFastPathUsesItsLease(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *forwarder.Config) { c.InlineTimeout = -1 }) // the lease is for what is not sent inline
	res, err := h.f.Applier(h.st).Apply(t.Context(), store.ApplyRequest{Changes: commitChanges(h.clock.Now(), "k")})
	require.NoError(t, err)
	require.Len(t, res.Sendable, 1)
	require.Equal(t, h.clock.Now().Add(testLease), res.Sendable[0].SendNextAt)
	require.Eventually(t, func() bool { return h.st.Count(state.SendSent) == 1 }, 5*time.Second, time.Millisecond, "sent by the handoff (the scan waits for the lease on a clock that does not move)")
}
