package state

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	t0   = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t1   = t0.Add(time.Second)
	body = &Body{Payload: []byte("p"), Topic: "orders", ForwardKey: "fk", Verify: "http://x/check", CheckAfter: 5 * time.Second}
)

// row builders for the table's "current" column.
func none() Message { return Message{BizID: "b", Key: "k", Partition: 3} }

func prepared() Message {
	m, _, _ := Apply(none(), Event{Kind: KindPrepare, At: t0, Body: body})
	return m
}

func committedNoBody() Message {
	m, _, _ := Apply(none(), Event{Kind: KindCommit, At: t0})
	return m
}

func committed(s SendStatus) Message {
	m, _, _ := Apply(prepared(), Event{Kind: KindCommit, At: t0})
	m.SendStatus = s
	return m
}

// ordered is a committed message with an order key, sequenced (as the
// store sequences it when it becomes sendable), in send status s.
func ordered(s SendStatus) Message {
	m := committed(s)
	m.OrderKey, m.OrderSeq = "o-1", 7
	return m
}

func rolledBack() Message {
	m, _, _ := Apply(prepared(), Event{Kind: KindRollback, At: t0})
	return m
}

func rolledBackNoBody() Message {
	m, _, _ := Apply(none(), Event{Kind: KindRollback, At: t0})
	return m
}

func verifyFailed() Message {
	m, _, _ := Apply(prepared(), Event{Kind: KindCheckParked, At: t0, Err: "gave up"})
	return m
}

// scheduledBody is body with a deliver-at an hour after t1.
var scheduledBody = func() *Body { b := *body; b.DeliverAt = t1.Add(time.Hour); return &b }()

// preparedScheduled is a PREPARED message with a deliver-at.
func preparedScheduled() Message {
	m, _, _ := Apply(none(), Event{Kind: KindPrepare, At: t0, Body: scheduledBody})
	return m
}

// scheduled is a committed message held until its deliver-at (SCHEDULED).
func scheduled() Message {
	m, _, _ := Apply(preparedScheduled(), Event{Kind: KindCommit, At: t0})
	return m
}

// cancelled is a PREPARED message cancelled before its decision.
func cancelled() Message {
	m, _, _ := Apply(prepared(), Event{Kind: KindCancel, At: t0})
	return m
}

// cancelledCommitted is a committed message cancelled before its send.
func cancelledCommitted() Message {
	m, _, _ := Apply(scheduled(), Event{Kind: KindCancel, At: t0})
	return m
}

func ev(k Kind) Event {
	e := Event{Kind: k, At: t1, RetryAt: t1.Add(time.Minute), MaxAttempts: 3, Err: "boom", Ref: "ref"}
	if k == KindPrepare {
		e.Body = body
	}
	return e
}

// TestTable walks every cell of docs/state-machine.md's transition table
// with expectations of its own (the document's table is generated from
// Apply and checked by TestSpecTableMatchesApply).
func TestTable(t *testing.T) {
	t.Parallel()
	type want struct {
		status   Status
		send     SendStatus
		hasBody  bool
		effect   Effect
		sendable bool
		parked   bool
		err      error
	}
	cases := []struct {
		name string
		cur  Message
		kind Kind
		want want
	}{
		// (none)
		{"none/prepare", none(), KindPrepare, want{status: Prepared, hasBody: true, effect: Changed}},
		{"none/commit", none(), KindCommit, want{status: Committed, effect: Changed}},
		{"none/rollback", none(), KindRollback, want{status: RolledBack, effect: Changed}},
		{"none/check unknown", none(), KindCheckUnknown, want{status: None}},
		{"none/check commit", none(), KindCheckCommit, want{status: None}},
		{"none/sent", none(), KindSent, want{status: None}},
		{"none/operator commit", none(), KindResolveCommit, want{status: None, err: ErrNoMessage}},
		{"none/operator rollback", none(), KindResolveRollback, want{status: None, err: ErrNoMessage}},
		{"none/redeliver", none(), KindRedeliver, want{status: None, err: ErrNoMessage}},
		{"none/retry", none(), KindRetryNow, want{status: None, err: ErrNoMessage}},
		{"none/close orphan", none(), KindCloseOrphan, want{status: None, err: ErrNoMessage}},
		// PREPARED
		{"prepared/prepare duplicate", prepared(), KindPrepare, want{status: Prepared, hasBody: true}},
		{"prepared/commit", prepared(), KindCommit, want{status: Committed, hasBody: true, effect: Changed, sendable: true}},
		{"prepared/rollback", prepared(), KindRollback, want{status: RolledBack, hasBody: true, effect: Changed}},
		{"prepared/check commit", prepared(), KindCheckCommit, want{status: Committed, hasBody: true, effect: Changed, sendable: true}},
		{"prepared/check rollback", prepared(), KindCheckRollback, want{status: RolledBack, hasBody: true, effect: Changed}},
		{"prepared/check unknown", prepared(), KindCheckUnknown, want{status: Prepared, hasBody: true, effect: Changed}},
		{"prepared/check deferred", prepared(), KindCheckDeferred, want{status: Prepared, hasBody: true, effect: Changed}},
		{"prepared/check parked", prepared(), KindCheckParked, want{status: VerifyFailed, hasBody: true, effect: Changed, parked: true}},
		{"prepared/operator commit", prepared(), KindResolveCommit, want{status: Committed, hasBody: true, effect: Changed, sendable: true}},
		{"prepared/operator rollback", prepared(), KindResolveRollback, want{status: RolledBack, hasBody: true, effect: Changed}},
		{"prepared/redeliver", prepared(), KindRedeliver, want{status: Prepared, hasBody: true, err: ErrWrongState}},
		{"prepared/retry", prepared(), KindRetryNow, want{status: Prepared, hasBody: true, effect: Changed}},
		{"prepared/sent ignored", prepared(), KindSent, want{status: Prepared, hasBody: true}},
		{"prepared/close orphan", prepared(), KindCloseOrphan, want{status: Prepared, hasBody: true, err: ErrWrongState}},
		{"prepared/send failed ignored", prepared(), KindSendFailed, want{status: Prepared, hasBody: true}},
		// COMMITTED, no body
		{"committed-nobody/prepare fills body", committedNoBody(), KindPrepare, want{status: Committed, hasBody: true, effect: Changed, sendable: true}},
		{"committed-nobody/commit", committedNoBody(), KindCommit, want{status: Committed}},
		{"committed-nobody/rollback conflict", committedNoBody(), KindRollback, want{status: Committed, effect: Conflict}},
		{"committed-nobody/check unknown", committedNoBody(), KindCheckUnknown, want{status: Committed}},
		{"committed-nobody/operator commit", committedNoBody(), KindResolveCommit, want{status: Committed, err: ErrWrongState}},
		{"committed-nobody/redeliver", committedNoBody(), KindRedeliver, want{status: Committed, err: ErrWrongState}},
		{"committed-nobody/retry", committedNoBody(), KindRetryNow, want{status: Committed, err: ErrWrongState}},
		{"committed-nobody/sent ignored", committedNoBody(), KindSent, want{status: Committed}},
		{"committed-nobody/operator close orphan", committedNoBody(), KindCloseOrphan, want{status: RolledBack, effect: Changed}},
		// COMMITTED
		{"committed/prepare", committed(SendPending), KindPrepare, want{status: Committed, hasBody: true}},
		{"committed/commit", committed(SendPending), KindCommit, want{status: Committed, hasBody: true}},
		{"committed/rollback conflict", committed(SendPending), KindRollback, want{status: Committed, hasBody: true, effect: Conflict}},
		{"committed/check rollback conflict", committed(SendSent), KindCheckRollback, want{status: Committed, send: SendSent, hasBody: true, effect: Conflict}},
		{"committed/check commit", committed(SendSent), KindCheckCommit, want{status: Committed, send: SendSent, hasBody: true}},
		{"committed/check unknown stale", committed(SendPending), KindCheckUnknown, want{status: Committed, hasBody: true}},
		{"committed/operator commit", committed(SendSent), KindResolveCommit, want{status: Committed, send: SendSent, hasBody: true, err: ErrWrongState}},
		{"committed/operator rollback", committed(SendSent), KindResolveRollback, want{status: Committed, send: SendSent, hasBody: true, err: ErrWrongState}},
		{"committed/sent", committed(SendPending), KindSent, want{status: Committed, send: SendSent, hasBody: true, effect: Changed}},
		{"committed/sent twice", committed(SendSent), KindSent, want{status: Committed, send: SendSent, hasBody: true}},
		{"committed/send failed", committed(SendPending), KindSendFailed, want{status: Committed, hasBody: true, effect: Changed}},
		{"committed/send failed after sent", committed(SendSent), KindSendFailed, want{status: Committed, send: SendSent, hasBody: true}},
		{"committed/send deferred", committed(SendPending), KindSendDeferred, want{status: Committed, hasBody: true, effect: Changed}},
		{"committed/send deferred after sent", committed(SendSent), KindSendDeferred, want{status: Committed, send: SendSent, hasBody: true}},
		{"committed-nobody/send deferred ignored", committedNoBody(), KindSendDeferred, want{status: Committed}},
		{"prepared/send deferred ignored", prepared(), KindSendDeferred, want{status: Prepared, hasBody: true}},
		{"committed sent/redeliver", committed(SendSent), KindRedeliver, want{status: Committed, hasBody: true, effect: Changed, sendable: true}},
		{"committed dead/redeliver", committed(SendDead), KindRedeliver, want{status: Committed, hasBody: true, effect: Changed, sendable: true}},
		{"committed pending/redeliver", committed(SendPending), KindRedeliver, want{status: Committed, hasBody: true, err: ErrWrongState}},
		{"committed pending/retry", committed(SendPending), KindRetryNow, want{status: Committed, hasBody: true, effect: Changed, sendable: true}},
		{"committed dead/retry", committed(SendDead), KindRetryNow, want{status: Committed, hasBody: true, effect: Changed, sendable: true}},
		{"committed sent/retry", committed(SendSent), KindRetryNow, want{status: Committed, send: SendSent, hasBody: true, err: ErrWrongState}},
		{"committed pending/close orphan", committed(SendPending), KindCloseOrphan, want{status: Committed, hasBody: true, err: ErrWrongState}},
		{"committed sent/close orphan", committed(SendSent), KindCloseOrphan, want{status: Committed, send: SendSent, hasBody: true, err: ErrWrongState}},
		{"committed dead/close orphan", committed(SendDead), KindCloseOrphan, want{status: Committed, send: SendDead, hasBody: true, err: ErrWrongState}},
		{"committed pending/release order", committed(SendPending), KindReleaseOrder, want{status: Committed, hasBody: true, err: ErrWrongState}},
		{"committed pending/close head unordered", committed(SendPending), KindCloseHead, want{status: Committed, hasBody: true, err: ErrWrongState}},
		{"committed sent/close head", committed(SendSent), KindCloseHead, want{status: Committed, send: SendSent, hasBody: true, err: ErrWrongState}},
		{"committed dead/close head unordered", committed(SendDead), KindCloseHead, want{status: Committed, send: SendDead, hasBody: true, err: ErrWrongState}},
		{"committed-nobody/close head", committedNoBody(), KindCloseHead, want{status: Committed, err: ErrWrongState}},
		{"committed-nobody/release order", committedNoBody(), KindReleaseOrder, want{status: Committed, err: ErrWrongState}},
		// COMMITTED, ordered (sequence 7 of key o-1)
		{"ordered pending/release order", ordered(SendPending), KindReleaseOrder, want{status: Committed, hasBody: true, effect: Changed}},
		{"ordered dead/release order", ordered(SendDead), KindReleaseOrder, want{status: Committed, send: SendDead, hasBody: true, effect: Changed}},
		{"ordered sent/release order", ordered(SendSent), KindReleaseOrder, want{status: Committed, send: SendSent, hasBody: true, err: ErrWrongState}},
		{"ordered pending/close head", ordered(SendPending), KindCloseHead, want{status: Committed, send: SendDead, hasBody: true, effect: Changed}},
		{"ordered dead/close head", ordered(SendDead), KindCloseHead, want{status: Committed, send: SendDead, hasBody: true, effect: Changed}},
		{"ordered sent/close head", ordered(SendSent), KindCloseHead, want{status: Committed, send: SendSent, hasBody: true, err: ErrWrongState}},
		{"ordered pending/send failed", ordered(SendPending), KindSendFailed, want{status: Committed, hasBody: true, effect: Changed}},
		{"ordered pending/sent", ordered(SendPending), KindSent, want{status: Committed, send: SendSent, hasBody: true, effect: Changed}},
		{"ordered dead/retry", ordered(SendDead), KindRetryNow, want{status: Committed, hasBody: true, effect: Changed, sendable: true}},
		{"ordered sent/redeliver", ordered(SendSent), KindRedeliver, want{status: Committed, hasBody: true, effect: Changed, sendable: true}},
		// ROLLED_BACK
		{"rolled-back-nobody/prepare fills body", rolledBackNoBody(), KindPrepare, want{status: RolledBack, hasBody: true, effect: Changed}},
		{"rolled-back/prepare", rolledBack(), KindPrepare, want{status: RolledBack, hasBody: true}},
		{"rolled-back/commit conflict", rolledBack(), KindCommit, want{status: RolledBack, hasBody: true, effect: Conflict}},
		{"rolled-back/check commit conflict", rolledBack(), KindCheckCommit, want{status: RolledBack, hasBody: true, effect: Conflict}},
		{"rolled-back/rollback", rolledBack(), KindRollback, want{status: RolledBack, hasBody: true}},
		{"rolled-back/operator commit", rolledBack(), KindResolveCommit, want{status: RolledBack, hasBody: true, err: ErrWrongState}},
		{"rolled-back/redeliver", rolledBack(), KindRedeliver, want{status: RolledBack, hasBody: true, err: ErrWrongState}},
		{"rolled-back/retry", rolledBack(), KindRetryNow, want{status: RolledBack, hasBody: true, err: ErrWrongState}},
		{"rolled-back/sent ignored", rolledBack(), KindSent, want{status: RolledBack, hasBody: true}},
		{"rolled-back/close orphan", rolledBack(), KindCloseOrphan, want{status: RolledBack, hasBody: true, err: ErrWrongState}},
		{"rolled-back-nobody/close orphan", rolledBackNoBody(), KindCloseOrphan, want{status: RolledBack, err: ErrWrongState}},
		// VERIFY_FAILED
		{"verify-failed/prepare", verifyFailed(), KindPrepare, want{status: VerifyFailed, hasBody: true}},
		{"verify-failed/late commit", verifyFailed(), KindCommit, want{status: Committed, hasBody: true, effect: Changed, sendable: true}},
		{"verify-failed/late rollback", verifyFailed(), KindRollback, want{status: RolledBack, hasBody: true, effect: Changed}},
		{"verify-failed/check unknown stale", verifyFailed(), KindCheckUnknown, want{status: VerifyFailed, hasBody: true}},
		{"verify-failed/operator commit", verifyFailed(), KindResolveCommit, want{status: Committed, hasBody: true, effect: Changed, sendable: true}},
		{"verify-failed/operator rollback", verifyFailed(), KindResolveRollback, want{status: RolledBack, hasBody: true, effect: Changed}},
		{"verify-failed/retry reopens", verifyFailed(), KindRetryNow, want{status: Prepared, hasBody: true, effect: Changed}},
		{"verify-failed/redeliver", verifyFailed(), KindRedeliver, want{status: VerifyFailed, hasBody: true, err: ErrWrongState}},
		{"verify-failed/close orphan", verifyFailed(), KindCloseOrphan, want{status: VerifyFailed, hasBody: true, err: ErrWrongState}},
		{"verify-failed/close head", verifyFailed(), KindCloseHead, want{status: VerifyFailed, hasBody: true, err: ErrWrongState}},
		{"prepared/release order", prepared(), KindReleaseOrder, want{status: Prepared, hasBody: true, err: ErrWrongState}},
		{"rolled-back/close head", rolledBack(), KindCloseHead, want{status: RolledBack, hasBody: true, err: ErrWrongState}},
		{"none/release order", none(), KindReleaseOrder, want{status: None, err: ErrNoMessage}},
		{"none/close head", none(), KindCloseHead, want{status: None, err: ErrNoMessage}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			before := c.cur
			got, out, err := Apply(c.cur, ev(c.kind))
			if c.want.err != nil {
				require.ErrorIs(t, err, c.want.err)
				require.Equal(t, before, got, "a rejected action must not change the row")
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want.status, got.Status, "status")
			require.Equal(t, c.want.send, got.SendStatus, "send status")
			require.Equal(t, c.want.hasBody, got.HasBody, "has body")
			require.Equal(t, c.want.effect, out.Effect, "effect")
			require.Equal(t, c.want.sendable, out.Sendable, "sendable")
			require.Equal(t, c.want.parked, out.Parked, "parked")
			if out.Effect == NoOp {
				require.Equal(t, before, got, "a no-op must not change the row")
			}
			if out.Sendable {
				require.True(t, got.Sendable())
				require.Equal(t, t1, got.SendNextAt, "sendable means due now")
			}
			require.Equal(t, before, c.cur, "Apply must not modify its input")
		})
	}
}

// TestCloseOrphan: an operator closes an orphan COMMIT as ROLLED_BACK; what
// arrives afterwards never makes it sendable, and no envelope or result can
// close an orphan (only the operator event does).
func TestCloseOrphan(t *testing.T) {
	t.Parallel()
	m, out, err := Apply(committedNoBody(), Event{Kind: KindCloseOrphan, At: t1, Err: "ignored"})
	require.NoError(t, err)
	require.Equal(t, Outcome{Effect: Changed}, out)
	require.Equal(t, RolledBack, m.Status)
	require.Equal(t, t1, m.DecidedAt)
	require.Equal(t, t1, m.UpdatedAt)
	require.True(t, m.SendNextAt.IsZero())
	require.False(t, m.Sendable())

	late, out, err := Apply(m, ev(KindPrepare))
	require.NoError(t, err)
	require.Equal(t, Changed, out.Effect, "the late body is kept for the record")
	require.False(t, out.Sendable)
	require.False(t, late.Sendable())
	require.Equal(t, RolledBack, late.Status)
	_, out, err = Apply(m, ev(KindCommit))
	require.NoError(t, err)
	require.Equal(t, Conflict, out.Effect, "a late COMMIT is a conflict, not a re-commit")

	// Envelopes and results never close an orphan.
	for _, k := range []Kind{KindPrepare, KindCommit, KindRollback, KindCheckCommit, KindCheckRollback, KindCheckUnknown,
		KindCheckDeferred, KindCheckParked, KindSent, KindSendFailed, KindSendDeferred} {
		got, _, err := Apply(committedNoBody(), ev(k))
		require.NoError(t, err, k.String())
		require.NotEqual(t, RolledBack, got.Status, k.String())
	}
	require.True(t, KindCloseOrphan.IsOperator())
	require.Equal(t, "close_orphan", KindCloseOrphan.String())

	_, _, err = Apply(committed(SendPending), ev(KindCloseOrphan))
	require.ErrorContains(t, err, "has its body")
}

func TestPrepareSchedulesFirstCheck(t *testing.T) {
	t.Parallel()
	m := prepared()
	require.Equal(t, t0.Add(5*time.Second), m.VerifyNextAt)
	require.Equal(t, "orders", m.Topic)
	require.Equal(t, "fk", m.ForwardKey)
	require.Equal(t, []byte("p"), m.Payload)
	require.Equal(t, 3, int(m.Partition))
	require.Equal(t, t0, m.CreatedAt)
}

// Each check-back is counted when its claim is made; the unknown answer
// backs off without counting again, and the answer to the last allowed
// claim parks.
func TestCheckUnknownBacksOffThenParks(t *testing.T) {
	t.Parallel()
	m := prepared()
	for i := 1; i <= 2; i++ {
		var out Outcome
		var err error
		at := t0.Add(time.Duration(i) * time.Minute)
		m = ClaimCheckback(m, at.Add(2*time.Minute))
		require.Equal(t, i, m.VerifyAttempts, "counted at the claim")
		require.Equal(t, at.Add(2*time.Minute), m.VerifyNextAt, "checked again after the lease if never answered")
		m, out, err = Apply(m, Event{Kind: KindCheckUnknown, At: at, RetryAt: at.Add(time.Hour), MaxAttempts: 3, Err: "timeout"})
		require.NoError(t, err)
		require.False(t, out.Parked)
		require.Equal(t, Prepared, m.Status)
		require.Equal(t, i, m.VerifyAttempts, "the answer does not count again")
		require.Equal(t, at.Add(time.Hour), m.VerifyNextAt)
		require.Equal(t, "timeout", m.LastError)
	}
	m = ClaimCheckback(m, t1)
	m, out, err := Apply(m, Event{Kind: KindCheckUnknown, At: t1, RetryAt: t1, MaxAttempts: 3, Err: "last"})
	require.NoError(t, err)
	require.True(t, out.Parked)
	require.Equal(t, VerifyFailed, m.Status)
	require.Equal(t, 3, m.VerifyAttempts)
	require.Equal(t, "last", m.LastError)
}

// A claim whose call is never answered (its center was killed) still
// counts: the next claim after the lease is the next attempt, and one
// past the limit parks without a call, recording no more than the limit.
func TestLostClaimsCountAndParkAtTheLimit(t *testing.T) {
	t.Parallel()
	m := prepared()
	m = ClaimCheckback(m, t1)                // attempt 1: answered unknown
	m, _, _ = Apply(m, ev(KindCheckUnknown)) // MaxAttempts 3
	m = ClaimCheckback(m, t1)                // attempt 2: lost
	m = ClaimCheckback(m, t1)                // attempt 3: lost
	require.Equal(t, 3, m.VerifyAttempts)
	m = ClaimCheckback(m, t1) // past the limit: no call, parked
	require.Equal(t, 4, m.VerifyAttempts)
	m, out, err := Apply(m, Event{Kind: KindCheckUnknown, At: t1, MaxAttempts: 3, Err: "never answered"})
	require.NoError(t, err)
	require.True(t, out.Parked)
	require.Equal(t, VerifyFailed, m.Status)
	require.Equal(t, 3, m.VerifyAttempts, "never more than the limit recorded")
}

// A send handed over but not queued is due again at RetryAt, without an
// attempt: it was not tried.
func TestSendDeferredCountsNoAttempt(t *testing.T) {
	t.Parallel()
	m := committed(SendPending)
	m.SendAttempts = 2
	m.SendNextAt = t1.Add(30 * time.Second) // the fast path's lease
	got, out, err := Apply(m, Event{Kind: KindSendDeferred, At: t1, RetryAt: t1})
	require.NoError(t, err)
	require.Equal(t, Changed, out.Effect)
	require.False(t, out.Sendable, "not handed over again: the scan claims it")
	require.Equal(t, t1, got.SendNextAt)
	require.Equal(t, 2, got.SendAttempts)
	require.Equal(t, SendPending, got.SendStatus)
	require.False(t, KindSendDeferred.IsOperator())
	require.Equal(t, "send_deferred", KindSendDeferred.String())
}

// A claimed message that is put off (endpoint busy, circuit open) was not
// called: the attempt its claim counted is given back.
func TestCheckDeferredGivesBackTheClaimedAttempt(t *testing.T) {
	t.Parallel()
	m := ClaimCheckback(prepared(), t1)
	m, _, _ = Apply(m, Event{Kind: KindCheckUnknown, At: t1, RetryAt: t1, MaxAttempts: 3})
	m = ClaimCheckback(m, t1.Add(time.Minute))
	require.Equal(t, 2, m.VerifyAttempts)
	m, out, err := Apply(m, Event{Kind: KindCheckDeferred, At: t1, RetryAt: t1.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, Changed, out.Effect)
	require.Equal(t, 1, m.VerifyAttempts, "given back")
	require.Equal(t, t1.Add(time.Hour), m.VerifyNextAt)
	m, _, _ = Apply(prepared(), Event{Kind: KindCheckDeferred, At: t1, RetryAt: t1})
	require.Equal(t, 0, m.VerifyAttempts, "never below zero (a row claimed by an older center)")
	// Parked without a call (endpoint not allowed): given back too.
	m, out, err = Apply(ClaimCheckback(prepared(), t1), Event{Kind: KindCheckParked, At: t1, Err: "not allowed"})
	require.NoError(t, err)
	require.True(t, out.Parked)
	require.Equal(t, 0, m.VerifyAttempts)
}

func TestSendFailedBacksOffThenDies(t *testing.T) {
	t.Parallel()
	m := committed(SendPending)
	m, out, err := Apply(m, Event{Kind: KindSendFailed, At: t1, RetryAt: t1.Add(time.Minute), MaxAttempts: 2, Err: "broker down"})
	require.NoError(t, err)
	require.False(t, out.Dead)
	require.Equal(t, 1, m.SendAttempts)
	require.Equal(t, t1.Add(time.Minute), m.SendNextAt)
	m, out, err = Apply(m, Event{Kind: KindSendFailed, At: t1, RetryAt: t1, MaxAttempts: 2, Err: "still down"})
	require.NoError(t, err)
	require.True(t, out.Dead)
	require.Equal(t, SendDead, m.SendStatus)
	require.Equal(t, "still down", m.LastError)

	p, out, err := Apply(committed(SendPending), Event{Kind: KindSendFailed, At: t1, MaxAttempts: 10, Permanent: true, Err: "unknown topic"})
	require.NoError(t, err)
	require.True(t, out.Dead, "a permanent failure kills at once")
	require.Equal(t, SendDead, p.SendStatus)
}

func TestConflictIsCounted(t *testing.T) {
	t.Parallel()
	m, out, err := Apply(committed(SendSent), ev(KindRollback))
	require.NoError(t, err)
	require.Equal(t, Conflict, out.Effect)
	require.Equal(t, 1, m.Conflicts)
	require.Equal(t, Committed, m.Status)
}

func TestPrepareWithoutBodyIsRejected(t *testing.T) {
	t.Parallel()
	_, _, err := Apply(none(), Event{Kind: KindPrepare, At: t0})
	require.True(t, errors.Is(err, ErrBadEvent))
}

func TestSentRecordsRef(t *testing.T) {
	t.Parallel()
	m, _, err := Apply(committed(SendPending), Event{Kind: KindSent, At: t1, Ref: "orders/0@42"})
	require.NoError(t, err)
	require.Equal(t, "orders/0@42", m.SendRef)
	require.Equal(t, t1, m.SentAt)
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	for _, s := range []Status{Prepared, Committed, RolledBack, VerifyFailed} {
		got, err := ParseStatus(s.String())
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
	_, err := ParseStatus("DONE")
	require.ErrorContains(t, err, "unknown status")
	for _, s := range []SendStatus{SendPending, SendSent, SendDead} {
		got, err := ParseSendStatus(s.String())
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
	_, err = ParseSendStatus("x")
	require.Error(t, err)
}

// TestOrderData: the order key comes with the body, a different one is a
// different body, and the hold rule follows the send status.
func TestOrderData(t *testing.T) {
	t.Parallel()
	b := *body
	b.OrderKey = "o-1"
	m, _, err := Apply(none(), Event{Kind: KindPrepare, At: t0, Body: &b})
	require.NoError(t, err)
	require.Equal(t, "o-1", m.OrderKey)
	require.False(t, m.NeedsOrderSeq(), "not sendable yet")
	m, out, err := Apply(m, Event{Kind: KindCommit, At: t1})
	require.NoError(t, err)
	require.True(t, out.Sendable)
	require.True(t, m.NeedsOrderSeq(), "sendable with a key and no sequence")
	require.False(t, m.HoldsOrder(), "not sequenced yet")
	m.OrderSeq = 3
	require.False(t, m.NeedsOrderSeq())
	require.True(t, m.HoldsOrder())

	other := b
	other.OrderKey = "o-2"
	_, out, err = Apply(m, Event{Kind: KindPrepare, At: t1, Body: &other})
	require.NoError(t, err)
	require.True(t, out.BodyDiffers, "another order key is another body")

	// DEAD holds the key by default, and releases it under ReleaseOnDead.
	dead, out, err := Apply(m, Event{Kind: KindSendFailed, At: t1, Permanent: true, Err: "no"})
	require.NoError(t, err)
	require.True(t, out.Dead)
	require.True(t, dead.HoldsOrder(), "a DEAD message holds its key by default")
	require.Equal(t, int64(3), dead.OrderSeq)
	skip, _, err := Apply(m, Event{Kind: KindSendFailed, At: t1, Permanent: true, Err: "no", ReleaseOnDead: true})
	require.NoError(t, err)
	require.False(t, skip.HoldsOrder())
	require.Equal(t, int64(0), skip.OrderSeq)
	require.Equal(t, "o-1", skip.OrderKey, "the key stays for the record")
	// A failure that is not final keeps the key whatever the setting.
	retry, _, err := Apply(m, Event{Kind: KindSendFailed, At: t1, MaxAttempts: 5, RetryAt: t1, ReleaseOnDead: true})
	require.NoError(t, err)
	require.True(t, retry.HoldsOrder())

	// Retry of a DEAD holder keeps its place; a released one is sequenced
	// again (NeedsOrderSeq) when it becomes sendable.
	again, out, err := Apply(dead, Event{Kind: KindRetryNow, At: t1})
	require.NoError(t, err)
	require.True(t, out.Sendable)
	require.Equal(t, int64(3), again.OrderSeq)
	again, _, err = Apply(skip, Event{Kind: KindRetryNow, At: t1})
	require.NoError(t, err)
	require.True(t, again.NeedsOrderSeq())

	// Sent: no longer holds.
	sent, _, err := Apply(m, Event{Kind: KindSent, At: t1, Ref: "r"})
	require.NoError(t, err)
	require.False(t, sent.HoldsOrder())

	// Closing the head gives it up and releases the key.
	closed, _, err := Apply(m, Event{Kind: KindCloseHead, At: t1})
	require.NoError(t, err)
	require.Equal(t, SendDead, closed.SendStatus)
	require.False(t, closed.HoldsOrder())
	require.True(t, KindCloseHead.IsOperator())
	require.True(t, KindReleaseOrder.IsOperator())
	require.False(t, KindSendDeferred.IsOperator())
}
