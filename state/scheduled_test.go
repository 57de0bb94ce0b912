package state

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestScheduledAndCancelCells states, by hand, every cell the scheduled
// and cancelled columns and the cancel rows add to the transition table
// (TestSpecTableMatchesApply then checks the document against Apply).
func TestScheduledAndCancelCells(t *testing.T) {
	t.Parallel()
	const (
		noop    = "·"
		refused = "refused"
		toCanc  = "→ CANCELLED"
		toRB    = "→ ROLLED_BACK"
		sched   = "→ COMMITTED, SCHEDULED until deliver-at"
	)
	columns := map[string]func() Message{
		"prepared-scheduled": preparedScheduled, "scheduled": scheduled,
		"cancelled": cancelled, "cancelled-committed": cancelledCommitted,
	}
	want := map[string]map[Kind]string{
		"prepared-scheduled": {
			KindPrepare: noop, KindCommit: sched, KindRollback: toRB, KindCheckCommit: sched, KindCheckRollback: toRB,
			KindCheckUnknown: "rescheduled", KindCheckDeferred: "rescheduled", KindCheckParked: "→ VERIFY_FAILED, parked",
			KindSent: noop, KindSendFailed: noop, KindSendDeferred: noop,
			KindResolveCommit: sched, KindResolveRollback: toRB, KindRedeliver: refused, KindRetryNow: "rescheduled",
			KindCloseOrphan: refused, KindReleaseOrder: refused, KindCloseHead: refused, KindCancel: toCanc, KindOperatorCancel: toCanc,
		},
		"scheduled": {
			KindPrepare: noop, KindCommit: noop, KindRollback: "conflict", KindCheckCommit: noop, KindCheckRollback: "conflict",
			KindCheckUnknown: noop, KindCheckDeferred: noop, KindCheckParked: noop,
			KindSent: "send SENT", KindSendFailed: "attempt counted", KindSendDeferred: "rescheduled",
			KindResolveCommit: refused, KindResolveRollback: refused, KindRedeliver: refused, KindRetryNow: "rescheduled, **sendable**",
			KindCloseOrphan: refused, KindReleaseOrder: refused, KindCloseHead: refused, KindCancel: toCanc, KindOperatorCancel: toCanc,
		},
		"cancelled": {
			KindPrepare: noop, KindCommit: noop, KindRollback: toRB, KindCheckCommit: noop, KindCheckRollback: toRB,
			KindCheckUnknown: noop, KindCheckDeferred: noop, KindCheckParked: noop,
			KindSent: noop, KindSendFailed: noop, KindSendDeferred: noop,
			KindResolveCommit: refused, KindResolveRollback: refused, KindRedeliver: refused, KindRetryNow: refused,
			KindCloseOrphan: refused, KindReleaseOrder: refused, KindCloseHead: refused, KindCancel: noop, KindOperatorCancel: refused,
		},
		"cancelled-committed": {
			KindPrepare: noop, KindCommit: noop, KindRollback: noop, KindCheckCommit: noop, KindCheckRollback: noop,
			KindCheckUnknown: noop, KindCheckDeferred: noop, KindCheckParked: noop,
			KindSent: "→ COMMITTED, send SENT, late cancel counted", KindSendFailed: noop, KindSendDeferred: noop,
			KindResolveCommit: refused, KindResolveRollback: refused, KindRedeliver: refused, KindRetryNow: refused,
			KindCloseOrphan: refused, KindReleaseOrder: refused, KindCloseHead: refused, KindCancel: noop, KindOperatorCancel: refused,
		},
	}
	for name, cur := range columns {
		require.Len(t, want[name], len(kindNames), name)
		for k, w := range want[name] {
			require.Equal(t, w, cell(cur(), ev(k)), "%s / %s", name, k)
		}
	}
	// The cancel rows on the other columns.
	rows := []struct {
		cur        func() Message
		cancel, op string
	}{
		{none, toCanc, "refused: no row"},
		{prepared, toCanc, toCanc},
		{committedNoBody, toCanc, toCanc},
		{func() Message { return committed(SendPending) }, toCanc, toCanc},
		{func() Message { return committed(SendSent) }, "conflict (late cancel counted)", refused},
		{func() Message { return committed(SendDead) }, toCanc, toCanc},
		{func() Message { return ordered(SendPending) }, toCanc + ", order key released", toCanc + ", order key released"},
		{func() Message { return ordered(SendDead) }, toCanc + ", order key released", toCanc + ", order key released"},
		{rolledBackNoBody, noop, refused},
		{rolledBack, noop, refused},
		{verifyFailed, toCanc, toCanc},
	}
	for i, r := range rows {
		require.Equal(t, r.cancel, cell(r.cur(), ev(KindCancel)), "row %d cancel", i)
		require.Equal(t, r.op, cell(r.cur(), ev(KindOperatorCancel)), "row %d operator cancel", i)
	}
}

// A scheduled message's first send is due at its deliver-at, not at its
// commit; it is not due now (no inline send), and it is never sequenced.
func TestScheduledIsDueAtDeliverAt(t *testing.T) {
	t.Parallel()
	ob := *scheduledBody
	ob.OrderKey = "o-1"
	m, _, err := Apply(none(), Event{Kind: KindPrepare, At: t0, Body: &ob})
	require.NoError(t, err)
	m, out, err := Apply(m, Event{Kind: KindCommit, At: t1})
	require.NoError(t, err)
	require.False(t, out.Sendable, "not due at commit")
	require.True(t, m.Sendable())
	require.Equal(t, ob.DeliverAt, m.SendNextAt)
	require.Equal(t, ob.DeliverAt, m.DeliverAt)
	require.True(t, m.Scheduled(t1))
	require.False(t, m.Scheduled(ob.DeliverAt), "due at deliver-at: not SCHEDULED any more")
	require.False(t, m.NeedsOrderSeq(), "a scheduled message is not sequenced")

	// A deliver-at already passed at commit: due at once.
	past := *body
	past.DeliverAt = t0
	m, _, _ = Apply(none(), Event{Kind: KindPrepare, At: t0, Body: &past})
	m, out, _ = Apply(m, Event{Kind: KindCommit, At: t1})
	require.True(t, out.Sendable)
	require.Equal(t, t1, m.SendNextAt)
	require.False(t, m.Scheduled(t1))

	// The body after the decision: due at deliver-at too.
	m, _, _ = Apply(none(), Event{Kind: KindCommit, At: t0})
	m, out, _ = Apply(m, Event{Kind: KindPrepare, At: t1, Body: scheduledBody})
	require.False(t, out.Sendable)
	require.Equal(t, scheduledBody.DeliverAt, m.SendNextAt)
}

// A cancel after the send changes nothing but the count; a send that was
// in flight when the cancel came is recorded as sent, the cancel counted.
func TestLateCancel(t *testing.T) {
	t.Parallel()
	m, out, err := Apply(committed(SendSent), Event{Kind: KindCancel, At: t1})
	require.NoError(t, err)
	require.True(t, out.LateCancel)
	require.Equal(t, Committed, m.Status)
	require.Equal(t, SendSent, m.SendStatus)
	require.Equal(t, 1, m.Conflicts)

	m, _, _ = Apply(committed(SendPending), Event{Kind: KindCancel, At: t1})
	require.Equal(t, Cancelled, m.Status)
	require.False(t, m.Sendable())
	m, out, _ = Apply(m, Event{Kind: KindSent, At: t1, Ref: "p0@1"})
	require.True(t, out.LateCancel)
	require.Equal(t, Committed, m.Status)
	require.Equal(t, SendSent, m.SendStatus)
	require.Equal(t, "p0@1", m.SendRef)
	require.Equal(t, 1, m.Conflicts)

	// A failed send of a cancelled message leaves it cancelled.
	m, _, _ = Apply(committed(SendPending), Event{Kind: KindCancel, At: t1})
	m, out, _ = Apply(m, Event{Kind: KindSendFailed, At: t1, RetryAt: t1.Add(time.Second), MaxAttempts: 3})
	require.Equal(t, NoOp, out.Effect)
	require.Equal(t, Cancelled, m.Status)
}

func TestParseCancelled(t *testing.T) {
	t.Parallel()
	s, err := ParseStatus("CANCELLED")
	require.NoError(t, err)
	require.Equal(t, Cancelled, s)
	require.True(t, Cancelled.Known())
	require.False(t, KindCancel.IsOperator())
	require.True(t, KindOperatorCancel.IsOperator())
}
