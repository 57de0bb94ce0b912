package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// testStaleLastError: a message that moved on after a failed attempt
// (sent, decided, retried) shows no last error; one that only failed or
// was put off keeps it (store.ClearStaleError).
func testStaleLastError(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	keys := []string{"sent-by-apply", "sent-by-mark", "deferred", "dead-retried"}
	committedDue(t, b, biz, keys, func(int) int32 { return 0 })
	failSend := func(k string, perm bool) {
		t.Helper()
		b.apply(t, Event(biz, k, 0, state.Event{Kind: state.KindSendFailed, At: b.now(),
			RetryAt: b.now(), MaxAttempts: 5, Permanent: perm, Err: "broker down"}))
		require.Equal(t, "broker down", b.get(t, biz, k).LastError, k)
	}
	for _, k := range keys {
		failSend(k, k == "dead-retried")
	}

	// A send result after a failed try clears it.
	b.apply(t, Event(biz, "sent-by-apply", 0, state.Event{Kind: state.KindSent, At: b.now(), Ref: "p0@1"}))
	m := b.get(t, biz, "sent-by-apply")
	require.Equal(t, state.SendSent, m.SendStatus)
	require.Empty(t, m.LastError, "sent through Apply")
	m = b.get(t, biz, "sent-by-mark")
	require.NoError(t, b.s.MarkSent(t.Context(), []store.Sent{{ID: m.ID, Ref: "p0@2"}}))
	m = b.get(t, biz, "sent-by-mark")
	require.Equal(t, state.SendSent, m.SendStatus)
	require.Empty(t, m.LastError, "sent through MarkSent")

	// Put off: nothing was tried, the error stays.
	b.apply(t, Event(biz, "deferred", 0, state.Event{Kind: state.KindSendDeferred, At: b.now(), RetryAt: b.now()}))
	require.Equal(t, "broker down", b.get(t, biz, "deferred").LastError)

	// An operator retry of a dead send starts afresh.
	require.Equal(t, state.SendDead, b.get(t, biz, "dead-retried").SendStatus)
	n, err := b.s.RetryNowBizID(t.Context(), biz, store.Actor{Who: "op", Reason: "outage over"})
	require.NoError(t, err)
	require.Equal(t, 2, n, "the dead and the deferred message")
	require.Empty(t, b.get(t, biz, "dead-retried").LastError)

	// A decision after a failed check-back clears it; a failed check-back
	// sets it.
	b.apply(t, Prepare(biz, "checked", 0, b.now()))
	b.clock.Advance(2 * time.Minute)
	got, err := b.s.ClaimCheckbacks(t.Context(), store.Claim{Partitions: []int32{0}, Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 1)
	b.apply(t, Event(biz, "checked", 0, state.Event{Kind: state.KindCheckUnknown, At: b.now(),
		RetryAt: b.now().Add(time.Minute), MaxAttempts: 5, Err: "no answer"}))
	require.Equal(t, "no answer", b.get(t, biz, "checked").LastError)
	b.apply(t, Commit(biz, "checked", 0, b.now()))
	m = b.get(t, biz, "checked")
	require.Equal(t, state.Committed, m.Status)
	require.Empty(t, m.LastError, "decided")
	// A conflict leaves the row where it was, and its error too.
	failSend("checked", false)
	b.apply(t, Rollback(biz, "checked", 0, b.now()))
	require.Equal(t, "broker down", b.get(t, biz, "checked").LastError, "conflict")
}
