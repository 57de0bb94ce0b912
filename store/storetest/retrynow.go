package storetest

import (
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/stretchr/testify/require"
)

func testRetryNowBizID(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	committedDue(t, b, biz, []string{"pending", "dead", "sent"}, func(int) int32 { return 0 })
	b.apply(t, Event(biz, "pending", 0, state.Event{Kind: state.KindSendFailed, At: b.now(), RetryAt: b.now().Add(time.Hour), Err: "x"}))
	b.apply(t, Event(biz, "dead", 0, state.Event{Kind: state.KindSendFailed, At: b.now(), Permanent: true, Err: "x"}))
	require.NoError(t, b.s.MarkSent(t.Context(), []store.Sent{{ID: b.get(t, biz, "sent").ID}}))
	b.apply(t, Prepare(biz, "prepared", 0, b.now()), Prepare(biz, "failed", 0, b.now()),
		Rollback(biz, "rolled", 0, b.now()), Commit(biz, "nobody", 0, b.now()),
		Prepare("other", "prepared", 0, b.now()))
	b.apply(t, Event(biz, "failed", 0, state.Event{Kind: state.KindCheckParked, At: b.now(), Err: "not allowed"}))
	untouched := map[string]state.Message{}
	for _, k := range []string{"sent", "rolled", "nobody"} {
		untouched[k] = b.get(t, biz, k)
	}
	other := b.get(t, "other", "prepared")
	b.clock.Advance(time.Second)

	n, err := b.s.RetryNowBizID(t.Context(), biz, store.Actor{Who: "ops", Reason: "outage over"})
	require.NoError(t, err)
	require.Equal(t, 4, n)
	for _, k := range []string{"pending", "dead"} {
		m := b.get(t, biz, k)
		require.Equal(t, state.SendPending, m.SendStatus, k)
		require.Equal(t, 0, m.SendAttempts, k)
		require.Equal(t, b.now(), m.SendNextAt, k)
	}
	for _, k := range []string{"prepared", "failed"} {
		m := b.get(t, biz, k)
		require.Equal(t, state.Prepared, m.Status, k)
		require.Equal(t, b.now(), m.VerifyNextAt, k)
		audit, err := b.s.Audit(t.Context(), biz, k)
		require.NoError(t, err)
		require.Len(t, audit, 1)
		require.Equal(t, "ops", audit[0].Who)
		require.Equal(t, "outage over", audit[0].Reason)
		require.Equal(t, "retry_now", audit[0].Action)
	}
	for k, want := range untouched {
		require.Equal(t, want, b.get(t, biz, k), k)
	}
	require.Equal(t, other, b.get(t, "other", "prepared"))
	// Retried sends are due now for the scan (not leased to anyone).
	got, err := b.s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{0}, Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 2)
	n, err = b.s.RetryNowBizID(t.Context(), "nobody-here", store.Actor{Who: "ops"})
	require.NoError(t, err)
	require.Zero(t, n)
}

// testRetryNowMany resets more messages than one transaction of the
// drivers' takes.
func testRetryNowMany(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	const n = 1234
	var cs []store.Change
	for _, k := range Keys("r", n) {
		cs = append(cs, Prepare(biz, k, 0, b.now()))
	}
	cs = append(cs, Prepare("other", "x", 0, b.now()))
	b.apply(t, cs...)
	b.clock.Advance(time.Second)
	got, err := b.s.RetryNowBizID(t.Context(), biz, store.Actor{Who: "ops"})
	require.NoError(t, err)
	require.Equal(t, n, got)
	claimed, err := b.s.ClaimCheckbacks(t.Context(), store.Claim{Partitions: []int32{0}, Limit: 2 * n, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, n, "all due now; the other bizID's message is not")
	audit, err := b.s.Audit(t.Context(), biz, Keys("r", n)[n-1])
	require.NoError(t, err)
	require.Len(t, audit, 1)
}
