package storetest

import (
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/stretchr/testify/require"
)

// ---- the transition table of docs/state-machine.md ----

type transition struct {
	name string
	// setup builds the current state (nil: no row).
	setup func(b *bundle, t *testing.T)
	// change is the event under test.
	change func(b *bundle) store.Change
	// want is the expected outcome, wantErr an error it must wrap.
	want    state.Outcome
	wantErr error
	// check inspects the row afterwards (nil: the row must not exist).
	check func(t *testing.T, b *bundle, m state.Message)
	audit bool
}

const biz, key = "shop", "order:1" // message keys may contain ':'

func prepared(b *bundle, t *testing.T) { b.apply(t, Prepare(biz, key, 3, b.now())) }
func committedNoBody(b *bundle, t *testing.T) {
	b.apply(t, Commit(biz, key, 3, b.now()))
}
func committed(b *bundle, t *testing.T) {
	b.apply(t, Prepare(biz, key, 3, b.now()), Commit(biz, key, 3, b.now()))
}
func sent(b *bundle, t *testing.T) {
	committed(b, t)
	m := b.get(t, biz, key)
	require.NoError(t, b.s.MarkSent(t.Context(), []store.Sent{{ID: m.ID, Ref: "p0@1"}}))
}
func rolledBack(b *bundle, t *testing.T)         { b.apply(t, Rollback(biz, key, 3, b.now())) }
func rolledBackWithBody(b *bundle, t *testing.T) { prepared(b, t); rolledBack(b, t) }

// claimed is a PREPARED message whose check-back came due and was claimed
// (the claim counted attempt 1).
func claimed(b *bundle, t *testing.T) {
	prepared(b, t)
	b.clock.Advance(time.Minute)
	got, err := b.s.ClaimCheckbacks(t.Context(), store.Claim{Partitions: []int32{3}, Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, 1, got[0].VerifyAttempts, "the claim counts the attempt")
}

func verifyFailed(b *bundle, t *testing.T) {
	claimed(b, t)
	b.apply(t, Event(biz, key, 3, state.Event{Kind: state.KindCheckUnknown, At: b.now(), MaxAttempts: 1, Err: "no answer"}))
}

func ev(kind state.Kind) func(b *bundle) store.Change {
	return func(b *bundle) store.Change {
		switch kind {
		case state.KindPrepare:
			return Prepare(biz, key, 3, b.now())
		case state.KindCommit:
			return Commit(biz, key, 3, b.now())
		case state.KindRollback:
			return Rollback(biz, key, 3, b.now())
		}
		if kind.IsOperator() {
			return Operator(biz, key, kind, b.now(), "alice")
		}
		return Event(biz, key, 3, state.Event{Kind: kind, At: b.now(), RetryAt: b.now().Add(time.Hour), MaxAttempts: 3, Err: "boom"})
	}
}

var (
	changed  = state.Outcome{Effect: state.Changed}
	toSend   = state.Outcome{Effect: state.Changed, Sendable: true}
	noop     = state.Outcome{}
	conflict = state.Outcome{Effect: state.Conflict}
)

func status(st state.Status, hasBody bool) func(t *testing.T, b *bundle, m state.Message) {
	return func(t *testing.T, b *bundle, m state.Message) {
		t.Helper()
		require.Equal(t, st, m.Status)
		require.Equal(t, hasBody, m.HasBody)
	}
}

func both(fs ...func(t *testing.T, b *bundle, m state.Message)) func(t *testing.T, b *bundle, m state.Message) {
	return func(t *testing.T, b *bundle, m state.Message) {
		t.Helper()
		for _, f := range fs {
			f(t, b, m)
		}
	}
}

func sendDueNow(t *testing.T, b *bundle, m state.Message) {
	t.Helper()
	require.Equal(t, state.SendPending, m.SendStatus)
	// Handed to the caller leased: due again when the lease runs out.
	require.Equal(t, b.now().Add(lease), m.SendNextAt)
	require.NotZero(t, m.LeaseToken)
}

func conflicts(n int) func(t *testing.T, b *bundle, m state.Message) {
	return func(t *testing.T, b *bundle, m state.Message) { t.Helper(); require.Equal(t, n, m.Conflicts) }
}

func transitions() []transition {
	return []transition{
		// (none)
		{name: "none/prepare", change: ev(state.KindPrepare), want: changed,
			check: both(status(state.Prepared, true), func(t *testing.T, b *bundle, m state.Message) {
				require.Equal(t, b.now().Add(time.Minute), m.VerifyNextAt)
				require.EqualValues(t, 3, m.Partition)
				require.Equal(t, b.now(), m.CreatedAt)
			})},
		{name: "none/commit", change: ev(state.KindCommit), want: changed,
			check: both(status(state.Committed, false), func(t *testing.T, b *bundle, m state.Message) {
				require.Equal(t, state.SendPending, m.SendStatus)
				require.Equal(t, b.now(), m.DecidedAt)
			})},
		{name: "none/rollback", change: ev(state.KindRollback), want: changed, check: status(state.RolledBack, false)},
		{name: "none/check_unknown", change: ev(state.KindCheckUnknown), want: noop},
		{name: "none/resolve_commit", change: ev(state.KindResolveCommit), wantErr: store.ErrNotFound},
		{name: "none/redeliver", change: ev(state.KindRedeliver), wantErr: store.ErrNotFound},
		// PREPARED
		{name: "prepared/prepare", setup: prepared, change: ev(state.KindPrepare), want: noop, check: status(state.Prepared, true)},
		{name: "prepared/commit", setup: prepared, change: ev(state.KindCommit), want: toSend,
			check: both(status(state.Committed, true), sendDueNow)},
		{name: "prepared/rollback", setup: prepared, change: ev(state.KindRollback), want: changed, check: status(state.RolledBack, true)},
		{name: "prepared/check_commit", setup: prepared, change: ev(state.KindCheckCommit), want: toSend,
			check: both(status(state.Committed, true), sendDueNow)},
		{name: "prepared/check_rollback", setup: prepared, change: ev(state.KindCheckRollback), want: changed, check: status(state.RolledBack, true)},
		{name: "prepared/check_unknown", setup: claimed, change: ev(state.KindCheckUnknown), want: changed,
			check: both(status(state.Prepared, true), func(t *testing.T, b *bundle, m state.Message) {
				require.Equal(t, 1, m.VerifyAttempts, "counted at the claim, not again")
				require.Equal(t, b.now().Add(time.Hour), m.VerifyNextAt)
				require.Equal(t, "boom", m.LastError)
			})},
		{name: "prepared/check_deferred", setup: claimed, change: ev(state.KindCheckDeferred), want: changed,
			check: func(t *testing.T, b *bundle, m state.Message) {
				require.Equal(t, 0, m.VerifyAttempts, "the claim's attempt given back")
				require.Equal(t, b.now().Add(time.Hour), m.VerifyNextAt)
			}},
		{name: "prepared/check_parked", setup: prepared, change: ev(state.KindCheckParked),
			want: state.Outcome{Effect: state.Changed, Parked: true}, check: status(state.VerifyFailed, true)},
		{name: "prepared/resolve_commit", setup: prepared, change: ev(state.KindResolveCommit), want: toSend, audit: true,
			check: both(status(state.Committed, true), sendDueNow)},
		{name: "prepared/resolve_rollback", setup: prepared, change: ev(state.KindResolveRollback), want: changed, audit: true,
			check: status(state.RolledBack, true)},
		{name: "prepared/redeliver", setup: prepared, change: ev(state.KindRedeliver), wantErr: store.ErrWrongState,
			check: status(state.Prepared, true)},
		// COMMITTED without body
		{name: "committed-nobody/prepare", setup: committedNoBody, change: ev(state.KindPrepare), want: toSend,
			check: both(status(state.Committed, true), sendDueNow, func(t *testing.T, b *bundle, m state.Message) {
				require.Equal(t, "payload of "+key, string(m.Payload))
				require.Equal(t, "orders", m.Topic)
			})},
		{name: "committed-nobody/commit", setup: committedNoBody, change: ev(state.KindCommit), want: noop, check: status(state.Committed, false)},
		{name: "committed-nobody/rollback", setup: committedNoBody, change: ev(state.KindRollback), want: conflict,
			check: both(status(state.Committed, false), conflicts(1))},
		{name: "committed-nobody/redeliver", setup: committedNoBody, change: ev(state.KindRedeliver), wantErr: store.ErrWrongState,
			check: status(state.Committed, false)},
		{name: "committed-nobody/close_orphan", setup: committedNoBody, change: ev(state.KindCloseOrphan), want: changed, audit: true,
			check: both(status(state.RolledBack, false), func(t *testing.T, b *bundle, m state.Message) {
				require.Equal(t, b.now(), m.DecidedAt, "retention counts from the close")
				require.True(t, m.SendNextAt.IsZero())
			})},
		{name: "committed/close_orphan", setup: committed, change: ev(state.KindCloseOrphan), wantErr: store.ErrWrongState,
			check: status(state.Committed, true)},
		{name: "committed-sent/close_orphan", setup: sent, change: ev(state.KindCloseOrphan), wantErr: store.ErrWrongState,
			check: status(state.Committed, true)},
		{name: "prepared/close_orphan", setup: prepared, change: ev(state.KindCloseOrphan), wantErr: store.ErrWrongState,
			check: status(state.Prepared, true)},
		{name: "none/close_orphan", change: ev(state.KindCloseOrphan), wantErr: store.ErrNotFound},
		// COMMITTED
		{name: "committed/prepare", setup: committed, change: ev(state.KindPrepare), want: noop, check: status(state.Committed, true)},
		{name: "committed/commit", setup: committed, change: ev(state.KindCommit), want: noop, check: status(state.Committed, true)},
		{name: "committed/rollback", setup: committed, change: ev(state.KindRollback), want: conflict,
			check: both(status(state.Committed, true), conflicts(1))},
		{name: "committed/check_unknown", setup: committed, change: ev(state.KindCheckUnknown), want: noop, check: status(state.Committed, true)},
		{name: "committed/resolve_rollback", setup: committed, change: ev(state.KindResolveRollback), wantErr: store.ErrWrongState,
			check: status(state.Committed, true)},
		{name: "committed-pending/redeliver", setup: committed, change: ev(state.KindRedeliver), wantErr: store.ErrWrongState},
		{name: "committed-sent/redeliver", setup: sent, change: ev(state.KindRedeliver), want: toSend, audit: true,
			check: both(status(state.Committed, true), sendDueNow)},
		// ROLLED_BACK
		{name: "rolled-back-nobody/prepare", setup: rolledBack, change: ev(state.KindPrepare), want: changed,
			check: both(status(state.RolledBack, true), func(t *testing.T, b *bundle, m state.Message) {
				require.Equal(t, "payload of "+key, string(m.Payload))
			})},
		{name: "rolled-back/prepare", setup: rolledBackWithBody, change: ev(state.KindPrepare), want: noop, check: status(state.RolledBack, true)},
		{name: "rolled-back/commit", setup: rolledBack, change: ev(state.KindCommit), want: conflict,
			check: both(status(state.RolledBack, false), conflicts(1))},
		{name: "rolled-back/rollback", setup: rolledBack, change: ev(state.KindRollback), want: noop, check: status(state.RolledBack, false)},
		{name: "rolled-back/resolve_commit", setup: rolledBack, change: ev(state.KindResolveCommit), wantErr: store.ErrWrongState},
		// VERIFY_FAILED
		{name: "verify-failed/prepare", setup: verifyFailed, change: ev(state.KindPrepare), want: noop, check: status(state.VerifyFailed, true)},
		{name: "verify-failed/commit", setup: verifyFailed, change: ev(state.KindCommit), want: toSend,
			check: both(status(state.Committed, true), sendDueNow)},
		{name: "verify-failed/rollback", setup: verifyFailed, change: ev(state.KindRollback), want: changed, check: status(state.RolledBack, true)},
		{name: "verify-failed/check_unknown", setup: verifyFailed, change: ev(state.KindCheckUnknown), want: noop, check: status(state.VerifyFailed, true)},
		{name: "verify-failed/resolve_commit", setup: verifyFailed, change: ev(state.KindResolveCommit), want: toSend, audit: true,
			check: both(status(state.Committed, true), sendDueNow, func(t *testing.T, b *bundle, m state.Message) {
				require.Empty(t, m.LastError)
			})},
		{name: "verify-failed/resolve_rollback", setup: verifyFailed, change: ev(state.KindResolveRollback), want: changed, audit: true,
			check: status(state.RolledBack, true)},
		{name: "verify-failed/retry_now", setup: verifyFailed, change: ev(state.KindRetryNow), want: changed, audit: true,
			check: both(status(state.Prepared, true), func(t *testing.T, b *bundle, m state.Message) {
				require.Equal(t, 0, m.VerifyAttempts)
				require.Equal(t, b.now(), m.VerifyNextAt)
			})},
	}
}

func testTransitions(t *testing.T, newStore NewStore) {
	for _, tc := range transitions() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, newStore)
			if tc.setup != nil {
				tc.setup(b, t)
			}
			b.clock.Advance(time.Second)
			before, beforeErr := b.s.Get(t.Context(), biz, key)
			c := tc.change(b)
			res := b.apply(t, c)
			out := res.Outcomes[0]
			if tc.wantErr != nil {
				require.ErrorIs(t, out.Err, tc.wantErr)
				require.Empty(t, res.Sendable)
			} else {
				require.NoError(t, out.Err)
				require.Equal(t, tc.want, out.Outcome)
			}
			require.False(t, out.Stale)
			m, err := b.s.Get(t.Context(), biz, key)
			if tc.check == nil && tc.setup == nil {
				require.ErrorIs(t, err, store.ErrNotFound)
				return
			}
			require.NoError(t, err)
			if tc.wantErr != nil || tc.want.Effect == state.NoOp {
				require.NoError(t, beforeErr)
				require.Equal(t, before, m, "a rejected or no-op change must not touch the row")
			}
			if tc.check != nil {
				tc.check(t, b, m)
			}
			if tc.want.Sendable {
				require.Len(t, res.Sendable, 1)
				require.Equal(t, m, res.Sendable[0], "the sendable returned is the row as written")
			} else {
				require.Empty(t, res.Sendable)
			}
			if tc.want.Effect == state.Changed {
				require.Equal(t, b.now(), m.UpdatedAt)
			}
			audit, err := b.s.Audit(t.Context(), biz, key)
			require.NoError(t, err)
			if !tc.audit {
				require.Empty(t, audit)
				return
			}
			require.Len(t, audit, 1)
			require.Equal(t, store.AuditEntry{BizID: biz, Key: key, Action: c.Event.Kind.String(), Who: "alice",
				Reason: "test " + c.Event.Kind.String(), At: b.now(), Before: before.Status.String(), After: m.Status.String()}, audit[0])
		})
	}
}
