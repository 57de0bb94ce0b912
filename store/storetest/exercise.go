package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// NewStore returns a fresh, empty, migrated store that reads time from now.
// It registers its own cleanup with t.
type NewStore func(t *testing.T, now func() time.Time) store.Store

// lease is the send lease the suite asks Apply for.
const lease = 30 * time.Second

// bundle is what each test of the suite starts from.
type bundle struct {
	s     store.Store
	clock *Clock
}

func setup(t *testing.T, newStore NewStore) *bundle {
	t.Helper()
	c := NewClock()
	return &bundle{s: newStore(t, c.Now), clock: c}
}

func (b *bundle) apply(t *testing.T, changes ...store.Change) store.ApplyResult {
	t.Helper()
	res, err := b.s.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: lease})
	require.NoError(t, err)
	require.Len(t, res.Outcomes, len(changes))
	return res
}

func (b *bundle) get(t *testing.T, biz, key string) state.Message {
	t.Helper()
	m, err := b.s.Get(t.Context(), biz, key)
	require.NoError(t, err)
	return m
}

func (b *bundle) now() time.Time { return b.clock.Now() }

// Exercise runs the conformance suite against the store newStore makes.
func Exercise(t *testing.T, newStore NewStore) {
	t.Helper()
	t.Run("Transitions", func(t *testing.T) { t.Parallel(); testTransitions(t, newStore) })
	t.Run("BodyRoundTrip", func(t *testing.T) { t.Parallel(); testBodyRoundTrip(t, newStore) })
	t.Run("GetNotFound", func(t *testing.T) { t.Parallel(); testGetNotFound(t, newStore) })
	t.Run("ReplayIsNoOp", func(t *testing.T) { t.Parallel(); testReplay(t, newStore) })
	t.Run("MixedBatchMatchesFold", func(t *testing.T) { t.Parallel(); testMixedBatch(t, newStore) })
	t.Run("PrepareCommitOneBatch", func(t *testing.T) { t.Parallel(); testPrepareCommitOneBatch(t, newStore) })
	t.Run("CommitBeforePrepare", func(t *testing.T) { t.Parallel(); testCommitBeforePrepare(t, newStore) })
	t.Run("SendablesLeased", func(t *testing.T) { t.Parallel(); testSendablesLeased(t, newStore) })
	t.Run("SendLeaseZero", func(t *testing.T) { t.Parallel(); testSendLeaseZero(t, newStore) })
	t.Run("ForwardFirst", func(t *testing.T) { t.Parallel(); testForwardFirst(t, newStore) })
	t.Run("ClaimPartitions", func(t *testing.T) { t.Parallel(); testClaimPartitions(t, newStore) })
	t.Run("ClaimValidation", func(t *testing.T) { t.Parallel(); testClaimValidation(t, newStore) })
	t.Run("ConcurrentClaims", func(t *testing.T) { t.Parallel(); testConcurrentClaims(t, newStore) })
	t.Run("ConcurrentApplySameKeys", func(t *testing.T) { t.Parallel(); testConcurrentApply(t, newStore) })
	t.Run("StaleLease", func(t *testing.T) { t.Parallel(); testStaleLease(t, newStore) })
	t.Run("MarkSent", func(t *testing.T) { t.Parallel(); testMarkSent(t, newStore) })
	t.Run("SendFailures", func(t *testing.T) { t.Parallel(); testSendFailures(t, newStore) })
	t.Run("Checkbacks", func(t *testing.T) { t.Parallel(); testCheckbacks(t, newStore) })
	t.Run("CheckbackClaimCountsTheAttempt", func(t *testing.T) { t.Parallel(); testClaimCountsTheAttempt(t, newStore) })
	t.Run("CheckbackPutOffGivesTheAttemptBack", func(t *testing.T) { t.Parallel(); testPutOffGivesTheAttemptBack(t, newStore) })
	t.Run("OperatorActions", func(t *testing.T) { t.Parallel(); testOperatorActions(t, newStore) })
	t.Run("List", func(t *testing.T) { t.Parallel(); testList(t, newStore) })
	t.Run("Counts", func(t *testing.T) { t.Parallel(); testCounts(t, newStore) })
	t.Run("OldestPrepared", func(t *testing.T) { t.Parallel(); testOldestPrepared(t, newStore) })
	t.Run("RetryNowBizID", func(t *testing.T) { t.Parallel(); testRetryNowBizID(t, newStore) })
	t.Run("RetryNowBizIDMany", func(t *testing.T) { t.Parallel(); testRetryNowMany(t, newStore) })
	t.Run("Purge", func(t *testing.T) { t.Parallel(); testPurge(t, newStore) })
	t.Run("OrphanCommits", func(t *testing.T) { t.Parallel(); testOrphanCommits(t, newStore) })
	t.Run("ListOrphans", func(t *testing.T) { t.Parallel(); testListOrphans(t, newStore) })
	t.Run("AddAudit", func(t *testing.T) { t.Parallel(); testAddAudit(t, newStore) })
	t.Run("AuditLog", func(t *testing.T) { t.Parallel(); testAuditLog(t, newStore) })
	t.Run("ListWithoutBodies", func(t *testing.T) { t.Parallel(); testListWithoutBodies(t, newStore) })
	t.Run("StaleLastError", func(t *testing.T) { t.Parallel(); testStaleLastError(t, newStore) })
}

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

func testBodyRoundTrip(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	payload := []byte{0, 1, 2, 0xff, 0xfe, '\n', 0}
	hs := []envelope.Header{
		{Key: "z", Value: []byte{0, 0xff}},
		{Key: "a", Value: nil},
		{Key: "a", Value: []byte("second a")},
		{Key: "ünïcode", Value: []byte("✓")},
	}
	c := Prepare(biz, "bin", 0, b.now())
	c.Event.Body = &state.Body{Payload: payload, Headers: hs, Target: "rocket", Topic: "t", ForwardKey: "fk",
		Tag: "tagA", Verify: "tri://h:1/svc/m", CheckAfter: time.Second}
	b.apply(t, c)
	m := b.get(t, biz, "bin")
	require.Equal(t, payload, m.Payload)
	require.Equal(t, hs, m.Headers)
	require.Equal(t, "rocket", m.Target)
	require.Equal(t, "fk", m.ForwardKey)
	require.Equal(t, "tagA", m.Tag)
	require.Equal(t, "tri://h:1/svc/m", m.Verify)

	// Empty payload and no headers stay empty.
	c = Prepare(biz, "empty", 0, b.now())
	c.Event.Body = &state.Body{Payload: []byte{}, Topic: "t"}
	b.apply(t, c)
	m = b.get(t, biz, "empty")
	require.Empty(t, m.Payload)
	require.Empty(t, m.Headers)
	require.True(t, m.HasBody)

	// The body arriving after the decision is written too.
	b.apply(t, Commit(biz, "late-body", 0, b.now()))
	c = Prepare(biz, "late-body", 0, b.now())
	c.Event.Body.Payload, c.Event.Body.Headers = payload, hs
	res := b.apply(t, c)
	require.Len(t, res.Sendable, 1)
	m = b.get(t, biz, "late-body")
	require.Equal(t, payload, m.Payload)
	require.Equal(t, hs, m.Headers)
	require.Equal(t, res.Sendable[0], m)
}

func testGetNotFound(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	_, err := b.s.Get(t.Context(), biz, "missing")
	require.ErrorIs(t, err, store.ErrNotFound)
	audit, err := b.s.Audit(t.Context(), biz, "missing")
	require.NoError(t, err)
	require.Empty(t, audit)
	// Empty batches are fine.
	res, err := b.s.Apply(t.Context(), store.ApplyRequest{})
	require.NoError(t, err)
	require.Empty(t, res.Outcomes)
	require.NoError(t, b.s.MarkSent(t.Context(), nil))
}

// batch is a mixed batch without contradicting decisions (a replayed
// conflict counts again, by design of the state machine).
func batch(now time.Time) []store.Change {
	return []store.Change{
		Prepare("a", "1", 0, now), Commit("a", "1", 0, now),
		Prepare("a", "2", 1, now),
		Rollback("a", "3", 1, now), Prepare("a", "3", 1, now),
		Commit("b", "4", 2, now),
		Prepare("b", "5", 2, now), Rollback("b", "5", 2, now),
		Prepare("b", "6", 0, now), Prepare("b", "6", 0, now),
	}
}

func testReplay(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	changes := batch(b.now())
	first := b.apply(t, changes...)
	require.Len(t, first.Sendable, 1)
	snapshot := func() []store.Summary {
		p, err := b.s.List(t.Context(), store.Filter{Limit: 100})
		require.NoError(t, err)
		return p.Messages
	}
	want := snapshot()
	require.Len(t, want, 6)
	b.clock.Advance(time.Minute)
	again := b.apply(t, changes...)
	for i, o := range again.Outcomes {
		require.Equal(t, noop, o.Outcome, "change %d", i)
		require.NoError(t, o.Err)
	}
	require.Empty(t, again.Sendable)
	require.Equal(t, want, snapshot())
	// Replaying a prefix of the batch (a crash in between) is a no-op too.
	b.apply(t, changes[:5]...)
	require.Equal(t, want, snapshot())
}

func testPrepareCommitOneBatch(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	res := b.apply(t, Prepare(biz, key, 5, b.now()), Commit(biz, key, 5, b.now()))
	require.Equal(t, changed, res.Outcomes[0].Outcome)
	require.Equal(t, toSend, res.Outcomes[1].Outcome)
	require.Len(t, res.Sendable, 1)
	m := b.get(t, biz, key)
	require.Equal(t, state.Committed, m.Status)
	require.True(t, m.Sendable())
	require.NotZero(t, m.ID)
	require.Equal(t, m, res.Sendable[0])
	p, err := b.s.List(t.Context(), store.Filter{})
	require.NoError(t, err)
	require.Len(t, p.Messages, 1)
}

func testCommitBeforePrepare(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	res := b.apply(t, Commit(biz, key, 1, b.now()))
	require.Empty(t, res.Sendable)
	// Not claimable without a body.
	got, err := b.s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{1}, Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Empty(t, got)
	b.clock.Advance(time.Second)
	res = b.apply(t, Prepare(biz, key, 1, b.now()))
	require.Len(t, res.Sendable, 1)
	require.Equal(t, key, res.Sendable[0].Key)
	require.True(t, res.Sendable[0].HasBody)
	require.Equal(t, "payload of "+key, string(res.Sendable[0].Payload))
}

func testSendablesLeased(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	res := b.apply(t, Prepare(biz, key, 1, b.now()), Commit(biz, key, 1, b.now()))
	require.Len(t, res.Sendable, 1)
	claim := store.Claim{Partitions: []int32{0, 1, 2}, Limit: 10, Lease: time.Minute}
	got, err := b.s.ClaimSends(t.Context(), claim)
	require.NoError(t, err)
	require.Empty(t, got, "leased by Apply")
	b.clock.Advance(lease - time.Microsecond)
	got, err = b.s.ClaimSends(t.Context(), claim)
	require.NoError(t, err)
	require.Empty(t, got, "still leased")
	b.clock.Advance(time.Microsecond)
	got, err = b.s.ClaimSends(t.Context(), claim)
	require.NoError(t, err)
	require.Len(t, got, 1, "the lease ran out")
	require.NotEqual(t, res.Sendable[0].LeaseToken, got[0].LeaseToken)
	require.NotZero(t, got[0].LeaseToken)
	require.Equal(t, b.now().Add(time.Minute), got[0].SendNextAt)
	require.Equal(t, got[0], b.get(t, biz, key), "a claim returns the row as written")
	got, err = b.s.ClaimSends(t.Context(), claim)
	require.NoError(t, err)
	require.Empty(t, got, "leased by the claim")
}

func testSendLeaseZero(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	res, err := b.s.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{
		Prepare(biz, key, 1, b.now()), Commit(biz, key, 1, b.now()),
	}})
	require.NoError(t, err)
	require.Len(t, res.Sendable, 1)
	require.Equal(t, b.now(), res.Sendable[0].SendNextAt, "left due now")
	got, err := b.s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{1}, Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 1)
}

// testForwardFirst: ApplyRequest.Forward sees the sendable messages before
// anything is written; those it reports sent are written sent with their
// reference (new rows and updated ones alike), the others leased as usual;
// it is not called when nothing became sendable.
func testForwardFirst(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	// "upd" is PREPARED first, so the forwarded batch updates its row.
	b.apply(t, Prepare(biz, "upd", 2, b.now()))
	var mu sync.Mutex // a sharded store calls it once per shard, concurrently
	var seen []state.Message
	calls := 0
	forward := func(ctx context.Context, msgs []state.Message) []store.Forwarded {
		require.NotNil(t, ctx)
		mu.Lock()
		defer mu.Unlock()
		calls++
		seen = append(seen, msgs...)
		out := make([]store.Forwarded, len(msgs))
		for i, m := range msgs {
			require.True(t, m.Sendable(), "%s is offered sendable", m.Key)
			require.NotZero(t, m.LeaseToken, "%s is offered leased", m.Key)
			if m.Key != "refused" {
				out[i] = store.Forwarded{Sent: true, Ref: "ref/" + m.Key}
			}
		}
		return out
	}
	b.clock.Advance(time.Second)
	res, err := b.s.Apply(t.Context(), store.ApplyRequest{SendLease: lease, Forward: forward, Changes: []store.Change{
		Prepare(biz, "new", 1, b.now()), Commit(biz, "new", 1, b.now()),
		Commit(biz, "upd", 2, b.now()),
		Prepare(biz, "refused", 3, b.now()), Commit(biz, "refused", 3, b.now()),
		Prepare(biz, "undecided", 4, b.now()),
	}})
	require.NoError(t, err)
	keys := func(ms []state.Message) []string {
		var ks []string
		for _, m := range ms {
			ks = append(ks, m.Key)
		}
		slices.Sort(ks)
		return ks
	}
	require.Equal(t, []string{"new", "refused", "upd"}, keys(seen), "offered once each")
	require.Equal(t, []string{"new", "upd"}, keys(res.Forwarded))
	require.Equal(t, []string{"refused"}, keys(res.Sendable))
	for _, k := range []string{"new", "upd"} {
		m := b.get(t, biz, k)
		require.Equal(t, state.Committed, m.Status, k)
		require.Equal(t, state.SendSent, m.SendStatus, k)
		require.Equal(t, "ref/"+k, m.SendRef, k)
		require.Equal(t, b.now(), m.SentAt, k)
		require.Contains(t, res.Forwarded, m, "Forwarded holds %s as written", k)
	}
	r := b.get(t, biz, "refused")
	require.True(t, r.Sendable(), "not sent: still pending")
	require.Equal(t, b.now().Add(lease), r.SendNextAt, "and leased")
	require.Equal(t, r, res.Sendable[0])

	// Sent rows are not claimed; the refused one is, once its lease ran out.
	b.clock.Advance(lease)
	got, err := b.s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{1, 2, 3}, Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Equal(t, []string{"refused"}, keys(got))

	// Nothing sendable: Forward is not called; a replay is a no-op.
	before := calls
	_, err = b.s.Apply(t.Context(), store.ApplyRequest{SendLease: lease, Forward: forward, Changes: []store.Change{
		Prepare(biz, "new", 1, b.now()), Commit(biz, "new", 1, b.now()), Prepare(biz, "other", 4, b.now()),
	}})
	require.NoError(t, err)
	require.Equal(t, before, calls)
	require.Equal(t, state.SendSent, b.get(t, biz, "new").SendStatus)
}

// committedDue inserts committed messages with bodies, due now.
func committedDue(t *testing.T, b *bundle, biz string, keys []string, partition func(i int) int32) {
	t.Helper()
	var cs []store.Change
	for i, k := range keys {
		cs = append(cs, Prepare(biz, k, partition(i), b.now()), Commit(biz, k, partition(i), b.now()))
	}
	_, err := b.s.Apply(t.Context(), store.ApplyRequest{Changes: cs}) // no lease: due now
	require.NoError(t, err)
}

func testClaimPartitions(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	committedDue(t, b, biz, Keys("k", 12), func(i int) int32 { return int32(i % 4) })
	// Prepared messages in every partition, due for check-back later.
	var cs []store.Change
	for i, k := range Keys("p", 8) {
		cs = append(cs, Prepare(biz, k, int32(i%4), b.now()))
	}
	b.apply(t, cs...)

	got, err := b.s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{1, 3}, Limit: 100, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 6)
	for _, m := range got {
		require.Contains(t, []int32{1, 3}, m.Partition)
		require.Equal(t, state.Committed, m.Status)
	}
	got, err = b.s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{7}, Limit: 100, Lease: time.Minute})
	require.NoError(t, err)
	require.Empty(t, got)
	got, err = b.s.ClaimSends(t.Context(), store.Claim{Partitions: nil, Limit: 100, Lease: time.Minute})
	require.NoError(t, err)
	require.Empty(t, got, "no partitions owned: nothing")
	// Limit.
	got, err = b.s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{0, 2}, Limit: 4, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 4)

	// Check-backs: not due yet, then due, only in the claimed partitions.
	claim := store.Claim{Partitions: []int32{2}, Limit: 100, Lease: time.Minute}
	got, err = b.s.ClaimCheckbacks(t.Context(), claim)
	require.NoError(t, err)
	require.Empty(t, got)
	b.clock.Advance(time.Minute)
	got, err = b.s.ClaimCheckbacks(t.Context(), claim)
	require.NoError(t, err)
	require.Len(t, got, 2)
	for _, m := range got {
		require.EqualValues(t, 2, m.Partition)
		require.Equal(t, state.Prepared, m.Status)
	}
}

func testClaimValidation(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	for _, c := range []store.Claim{
		{Partitions: []int32{0}, Limit: 0, Lease: time.Second},
		{Partitions: []int32{0}, Limit: 1, Lease: 0},
	} {
		_, err := b.s.ClaimSends(t.Context(), c)
		require.Error(t, err)
		_, err = b.s.ClaimCheckbacks(t.Context(), c)
		require.Error(t, err)
	}
	_, err := b.s.List(t.Context(), store.Filter{Cursor: "not a cursor"})
	require.Error(t, err)
	_, err = b.s.Purge(t.Context(), b.now(), 0)
	require.Error(t, err)
}

func testConcurrentClaims(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	const n = 300
	committedDue(t, b, biz, Keys("s", n), func(i int) int32 { return int32(i % 3) })
	var cs []store.Change
	for i, k := range Keys("c", n) {
		cs = append(cs, Prepare(biz, k, int32(i%3), b.now()))
	}
	b.apply(t, cs...)
	b.clock.Advance(time.Minute) // check-backs due

	for _, claimFn := range []func(store.Claim) ([]state.Message, error){
		func(c store.Claim) ([]state.Message, error) { return b.s.ClaimSends(t.Context(), c) },
		func(c store.Claim) ([]state.Message, error) { return b.s.ClaimCheckbacks(t.Context(), c) },
	} {
		const workers = 8
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Go(func() {
				// Overlapping partition sets.
				parts := [][]int32{{0, 1, 2}, {0, 1}, {1, 2}, {2, 0}}[w%4]
				for {
					got, err := claimFn(store.Claim{Partitions: parts, Limit: 7, Lease: time.Hour})
					if err != nil {
						errs <- err
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, m := range got {
						seen[m.ID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Len(t, seen, n, "every message claimed")
		for id, c := range seen {
			require.Equal(t, 1, c, "message %d claimed %d times", id, c)
		}
	}
}

func testConcurrentApply(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	keys := Keys("x", 50)
	const workers = 6
	outs := make([][]store.ChangeOutcome, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			var cs []store.Change
			// Different orders, to provoke lock-order trouble.
			ks := slices.Clone(keys)
			if w%2 == 1 {
				slices.Reverse(ks)
			}
			for _, k := range ks {
				if w%3 == 2 {
					cs = append(cs, Commit(biz, k, 0, b.now()))
				} else {
					cs = append(cs, Prepare(biz, k, 0, b.now()))
				}
			}
			res, err := b.s.Apply(t.Context(), store.ApplyRequest{Changes: cs, SendLease: lease})
			if err != nil {
				errs <- err
				return
			}
			outs[w] = res.Outcomes
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	p, err := b.s.List(t.Context(), store.Filter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, p.Messages, len(keys), "one row per key")
	for _, m := range p.Messages {
		require.Equal(t, state.Committed, m.Status, m.Key)
		require.True(t, m.HasBody, m.Key)
	}
	// Per key: exactly one prepare and one commit changed it.
	for i := range keys {
		n := 0
		for w, o := range outs {
			k := i
			if w%2 == 1 {
				k = len(keys) - 1 - i
			}
			if o[k].Effect == state.Changed {
				n++
			}
		}
		require.Equal(t, 2, n, "key %s", keys[i])
	}
}

func testStaleLease(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.apply(t, Prepare(biz, key, 0, b.now()))
	b.clock.Advance(time.Minute)
	claim := store.Claim{Partitions: []int32{0}, Limit: 1, Lease: 10 * time.Second}
	first, err := b.s.ClaimCheckbacks(t.Context(), claim)
	require.NoError(t, err)
	require.Len(t, first, 1)
	b.clock.Advance(10 * time.Second)
	second, err := b.s.ClaimCheckbacks(t.Context(), claim)
	require.NoError(t, err)
	require.Len(t, second, 1, "re-claimed after the lease ran out")
	require.NotEqual(t, first[0].LeaseToken, second[0].LeaseToken)

	stale := Event(biz, key, 0, state.Event{Kind: state.KindCheckCommit, At: b.now()})
	stale.LeaseToken = first[0].LeaseToken
	res := b.apply(t, stale)
	require.True(t, res.Outcomes[0].Stale)
	require.Equal(t, state.Prepared, b.get(t, biz, key).Status)

	fresh := Event(biz, key, 0, state.Event{Kind: state.KindCheckRollback, At: b.now()})
	fresh.LeaseToken = second[0].LeaseToken
	res = b.apply(t, fresh)
	require.False(t, res.Outcomes[0].Stale)
	require.Equal(t, changed, res.Outcomes[0].Outcome)
	require.Equal(t, state.RolledBack, b.get(t, biz, key).Status)

	// A leased result for a message that is gone is stale too.
	gone := Event(biz, "gone", 0, state.Event{Kind: state.KindSent, At: b.now()})
	gone.LeaseToken = 42
	res = b.apply(t, gone)
	require.True(t, res.Outcomes[0].Stale)

	// Send results: the token of Apply's lease guards them.
	res = b.apply(t, Prepare(biz, "s", 0, b.now()), Commit(biz, "s", 0, b.now()))
	tok := res.Sendable[0].LeaseToken
	b.clock.Advance(lease)
	re, err := b.s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{0}, Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, re, 1)
	failed := Event(biz, "s", 0, state.Event{Kind: state.KindSendFailed, At: b.now(), RetryAt: b.now().Add(time.Hour), Err: "x"})
	failed.LeaseToken = tok
	res = b.apply(t, failed)
	require.True(t, res.Outcomes[0].Stale)
	require.Equal(t, 0, b.get(t, biz, "s").SendAttempts)
}

func testMarkSent(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	committedDue(t, b, biz, []string{"pending", "dead", "sent"}, func(int) int32 { return 0 })
	b.apply(t, Prepare(biz, "prepared", 0, b.now()), Commit(biz, "nobody", 0, b.now()))
	b.apply(t, Event(biz, "dead", 0, state.Event{Kind: state.KindSendFailed, At: b.now(), Permanent: true, Err: "bad topic"}))
	ids := map[string]int64{}
	for _, k := range []string{"pending", "dead", "sent", "prepared", "nobody"} {
		ids[k] = b.get(t, biz, k).ID
	}
	require.NoError(t, b.s.MarkSent(t.Context(), []store.Sent{{ID: ids["sent"], Ref: "first"}}))
	b.clock.Advance(time.Second)
	before := map[string]state.Message{}
	for _, k := range []string{"dead", "sent", "prepared", "nobody"} {
		before[k] = b.get(t, biz, k)
	}
	var all []store.Sent
	for k, id := range ids {
		all = append(all, store.Sent{ID: id, Ref: "ref-" + k})
	}
	all = append(all, store.Sent{ID: 1 << 40, Ref: "missing"})
	require.NoError(t, b.s.MarkSent(t.Context(), all))
	m := b.get(t, biz, "pending")
	require.Equal(t, state.SendSent, m.SendStatus)
	require.Equal(t, "ref-pending", m.SendRef)
	require.Equal(t, b.now(), m.SentAt)
	require.Equal(t, b.now(), m.UpdatedAt)
	for k, want := range before {
		require.Equal(t, want, b.get(t, biz, k), "%s untouched", k)
	}
	require.Equal(t, "first", before["sent"].SendRef)
}

func testSendFailures(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	committedDue(t, b, biz, []string{"k", "perm"}, func(int) int32 { return 0 })
	fail := func(k string, max int, perm bool) store.ChangeOutcome {
		return b.apply(t, Event(biz, k, 0, state.Event{Kind: state.KindSendFailed, At: b.now(),
			RetryAt: b.now().Add(time.Minute), MaxAttempts: max, Permanent: perm, Err: "broker down"})).Outcomes[0]
	}
	require.Equal(t, changed, fail("k", 3, false).Outcome)
	m := b.get(t, biz, "k")
	require.Equal(t, 1, m.SendAttempts)
	require.Equal(t, b.now().Add(time.Minute), m.SendNextAt)
	require.Equal(t, "broker down", m.LastError)
	claim := store.Claim{Partitions: []int32{0}, Limit: 10, Lease: time.Hour}
	got, err := b.s.ClaimSends(t.Context(), claim)
	require.NoError(t, err)
	require.Len(t, got, 1) // only "perm" is due
	require.Equal(t, "perm", got[0].Key)
	b.clock.Advance(time.Minute)
	got, err = b.s.ClaimSends(t.Context(), claim)
	require.NoError(t, err)
	require.Len(t, got, 1, "due after the backoff")
	require.Equal(t, "k", got[0].Key)

	require.Equal(t, changed, fail("k", 3, false).Outcome)
	require.Equal(t, state.Outcome{Effect: state.Changed, Dead: true}, fail("k", 3, false).Outcome)
	m = b.get(t, biz, "k")
	require.Equal(t, state.SendDead, m.SendStatus)
	require.Equal(t, 3, m.SendAttempts)
	require.Equal(t, noop, fail("k", 3, false).Outcome, "dead stays dead")

	require.Equal(t, state.Outcome{Effect: state.Changed, Dead: true}, fail("perm", 10, true).Outcome)
	require.Equal(t, state.SendDead, b.get(t, biz, "perm").SendStatus)
	b.clock.Advance(time.Hour)
	got, err = b.s.ClaimSends(t.Context(), claim)
	require.NoError(t, err)
	require.Empty(t, got, "dead messages are not claimed")
}

func testCheckbacks(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.apply(t, Prepare(biz, key, 0, b.now()))
	claim := store.Claim{Partitions: []int32{0}, Limit: 10, Lease: 20 * time.Second}
	for attempt := 1; attempt <= 3; attempt++ {
		b.clock.Advance(time.Minute)
		got, err := b.s.ClaimCheckbacks(t.Context(), claim)
		require.NoError(t, err)
		require.Len(t, got, 1, "attempt %d", attempt)
		require.Equal(t, b.now().Add(20*time.Second), got[0].VerifyNextAt)
		require.Equal(t, attempt, got[0].VerifyAttempts, "the claim counts the attempt")
		require.Equal(t, attempt, b.get(t, biz, key).VerifyAttempts, "and writes it")
		again, err := b.s.ClaimCheckbacks(t.Context(), claim)
		require.NoError(t, err)
		require.Empty(t, again, "leased")
		c := Event(biz, key, 0, state.Event{Kind: state.KindCheckUnknown, At: b.now(),
			RetryAt: b.now().Add(time.Minute), MaxAttempts: 3, Err: fmt.Sprintf("unknown %d", attempt)})
		c.LeaseToken = got[0].LeaseToken
		out := b.apply(t, c).Outcomes[0]
		m := b.get(t, biz, key)
		require.Equal(t, attempt, m.VerifyAttempts)
		if attempt < 3 {
			require.Equal(t, changed, out.Outcome)
			require.Equal(t, state.Prepared, m.Status)
			require.Equal(t, b.now().Add(time.Minute), m.VerifyNextAt)
		} else {
			require.Equal(t, state.Outcome{Effect: state.Changed, Parked: true}, out.Outcome)
			require.Equal(t, state.VerifyFailed, m.Status)
			require.Equal(t, "unknown 3", m.LastError)
		}
	}
	b.clock.Advance(time.Hour)
	got, err := b.s.ClaimCheckbacks(t.Context(), claim)
	require.NoError(t, err)
	require.Empty(t, got, "VERIFY_FAILED is not checked back")
}

// The claim counts the attempt; a claim that is never answered (its
// center was killed during the call) is re-claimed after its lease as the
// next attempt, so the calls never exceed the limit: the claim past it
// comes back with more than the limit, and its result parks the message
// with the limit recorded.
func testClaimCountsTheAttempt(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	const maxAttempts = 3
	b.apply(t, Prepare(biz, key, 0, b.now()))
	b.clock.Advance(time.Minute)
	claim := store.Claim{Partitions: []int32{0}, Limit: 10, Lease: 20 * time.Second}
	var last []state.Message
	for attempt := 1; attempt <= maxAttempts+1; attempt++ {
		got, err := b.s.ClaimCheckbacks(t.Context(), claim)
		require.NoError(t, err)
		require.Len(t, got, 1, "claim %d", attempt)
		require.Equal(t, attempt, got[0].VerifyAttempts, "claim %d counts its attempt", attempt)
		m := b.get(t, biz, key)
		require.Equal(t, attempt, m.VerifyAttempts)
		require.Equal(t, state.Prepared, m.Status)
		require.Equal(t, b.now().Add(20*time.Second), m.VerifyNextAt, "checked again when the lease runs out")
		again, err := b.s.ClaimCheckbacks(t.Context(), claim)
		require.NoError(t, err)
		require.Empty(t, again, "leased")
		last = got
		b.clock.Advance(20 * time.Second) // never answered: the lease runs out
	}
	// The verifier makes no call for a claim past the limit and parks it.
	c := Event(biz, key, 0, state.Event{Kind: state.KindCheckUnknown, At: b.now(), MaxAttempts: maxAttempts,
		Err: "attempts used up by calls never answered"})
	c.LeaseToken = last[0].LeaseToken
	out := b.apply(t, c).Outcomes[0]
	require.Equal(t, state.Outcome{Effect: state.Changed, Parked: true}, out.Outcome)
	m := b.get(t, biz, key)
	require.Equal(t, state.VerifyFailed, m.Status)
	require.Equal(t, maxAttempts, m.VerifyAttempts, "never above the limit")
	b.clock.Advance(time.Hour)
	got, err := b.s.ClaimCheckbacks(t.Context(), claim)
	require.NoError(t, err)
	require.Empty(t, got, "VERIFY_FAILED is not claimed")
}

// A claimed message that is put off (endpoint busy, circuit open) was not
// called: its deferral gives the counted attempt back, and a stale one (the
// lease was taken over) gives nothing back.
func testPutOffGivesTheAttemptBack(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.apply(t, Prepare(biz, key, 0, b.now()))
	b.clock.Advance(time.Minute)
	claim := store.Claim{Partitions: []int32{0}, Limit: 10, Lease: 20 * time.Second}
	for range 5 {
		got, err := b.s.ClaimCheckbacks(t.Context(), claim)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, 1, got[0].VerifyAttempts)
		c := Event(biz, key, 0, state.Event{Kind: state.KindCheckDeferred, At: b.now(), RetryAt: b.now().Add(time.Second), Err: "busy"})
		c.LeaseToken = got[0].LeaseToken
		require.Equal(t, changed, b.apply(t, c).Outcomes[0].Outcome)
		m := b.get(t, biz, key)
		require.Equal(t, 0, m.VerifyAttempts, "put-offs burn no attempt")
		require.Equal(t, b.now().Add(time.Second), m.VerifyNextAt)
		b.clock.Advance(time.Second)
	}
	first, err := b.s.ClaimCheckbacks(t.Context(), claim)
	require.NoError(t, err)
	require.Len(t, first, 1)
	b.clock.Advance(20 * time.Second)
	second, err := b.s.ClaimCheckbacks(t.Context(), claim)
	require.NoError(t, err)
	require.Len(t, second, 1)
	require.Equal(t, 2, second[0].VerifyAttempts, "the first claim's call may have been made")
	stale := Event(biz, key, 0, state.Event{Kind: state.KindCheckDeferred, At: b.now(), RetryAt: b.now()})
	stale.LeaseToken = first[0].LeaseToken
	require.True(t, b.apply(t, stale).Outcomes[0].Stale)
	require.Equal(t, 2, b.get(t, biz, key).VerifyAttempts)
}

func testOperatorActions(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.apply(t, Prepare(biz, "p", 0, b.now()), Rollback(biz, "r", 0, b.now()))
	res := b.apply(t,
		Operator(biz, "missing", state.KindResolveCommit, b.now(), "bob"),
		Operator(biz, "r", state.KindResolveCommit, b.now(), "bob"),
		Operator(biz, "p", state.KindResolveCommit, b.now(), "bob"),
		Operator(biz, "p", state.KindResolveRollback, b.now(), "bob"),
	)
	require.ErrorIs(t, res.Outcomes[0].Err, store.ErrNotFound)
	require.ErrorIs(t, res.Outcomes[0].Err, state.ErrNoMessage)
	require.ErrorIs(t, res.Outcomes[1].Err, store.ErrWrongState)
	require.ErrorIs(t, res.Outcomes[1].Err, state.ErrWrongState)
	require.False(t, errors.Is(res.Outcomes[1].Err, store.ErrNotFound))
	require.NoError(t, res.Outcomes[2].Err, "the rest of the batch applies")
	require.Equal(t, toSend, res.Outcomes[2].Outcome)
	require.ErrorIs(t, res.Outcomes[3].Err, store.ErrWrongState, "after the commit in the same batch")
	require.Len(t, res.Sendable, 1)
	audit, err := b.s.Audit(t.Context(), biz, "p")
	require.NoError(t, err)
	require.Len(t, audit, 1, "only applied actions are audited")
	require.Equal(t, "PREPARED", audit[0].Before)
	require.Equal(t, "COMMITTED", audit[0].After)
	_, err = b.s.Get(t.Context(), biz, "missing")
	require.ErrorIs(t, err, store.ErrNotFound)
	audit, err = b.s.Audit(t.Context(), biz, "r")
	require.NoError(t, err)
	require.Empty(t, audit)
}

func testList(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	for i := range 10 {
		k := fmt.Sprintf("key-%02d", i)
		switch i % 3 {
		case 0:
			b.apply(t, Prepare("alpha", k, 0, b.now()))
		case 1:
			b.apply(t, Prepare("alpha", k, 0, b.now()), Commit("alpha", k, 0, b.now()))
		case 2:
			b.apply(t, Rollback("beta", k, 0, b.now()))
		}
		b.clock.Advance(time.Second)
	}
	list := func(f store.Filter) []string {
		t.Helper()
		p, err := b.s.List(t.Context(), f)
		require.NoError(t, err)
		var ks []string
		for _, m := range p.Messages {
			ks = append(ks, m.BizID+"/"+m.Key)
		}
		return ks
	}
	all := list(store.Filter{})
	require.Len(t, all, 10)
	require.Equal(t, "alpha/key-09", all[0], "newest first")
	require.Equal(t, "alpha/key-00", all[9])
	require.Equal(t, []string{"beta/key-08", "beta/key-05", "beta/key-02"}, list(store.Filter{BizID: "beta"}))
	require.Equal(t, []string{"alpha/key-07", "alpha/key-04", "alpha/key-01"}, list(store.Filter{Status: state.Committed}))
	pending := state.SendPending
	require.Equal(t, []string{"alpha/key-07", "alpha/key-04", "alpha/key-01"},
		list(store.Filter{Status: state.Committed, SendStatus: &pending}))
	sentSt := state.SendSent
	require.Empty(t, list(store.Filter{SendStatus: &sentSt}))
	require.Equal(t, []string{"alpha/key-03"}, list(store.Filter{KeyContains: "-03"}))
	require.Empty(t, list(store.Filter{KeyContains: "%"}), "no LIKE wildcards")
	require.Empty(t, list(store.Filter{KeyContains: "_"}), "no LIKE wildcards")
	start := NewClock().Now()
	require.Equal(t, []string{"alpha/key-01", "alpha/key-00"}, list(store.Filter{CreatedBefore: start.Add(2 * time.Second)}))
	require.Equal(t, []string{"alpha/key-09", "alpha/key-06", "alpha/key-03", "alpha/key-00"},
		list(store.Filter{BizID: "alpha", Status: state.Prepared}))

	// Pages.
	var paged []string
	f := store.Filter{Limit: 3}
	pages := 0
	for {
		p, err := b.s.List(t.Context(), f)
		require.NoError(t, err)
		pages++
		require.LessOrEqual(t, len(p.Messages), 3)
		for _, m := range p.Messages {
			paged = append(paged, m.BizID+"/"+m.Key)
		}
		if p.Next == "" {
			break
		}
		f.Cursor = p.Next
	}
	require.Equal(t, all, paged)
	require.Equal(t, 4, pages)
	// A page that ends exactly at the end has no next cursor.
	p, err := b.s.List(t.Context(), store.Filter{BizID: "beta", Limit: 3})
	require.NoError(t, err)
	require.Len(t, p.Messages, 3)
	require.Empty(t, p.Next)
	// Filters apply across pages.
	p, err = b.s.List(t.Context(), store.Filter{BizID: "alpha", Limit: 4})
	require.NoError(t, err)
	require.NotEmpty(t, p.Next)
	p, err = b.s.List(t.Context(), store.Filter{BizID: "alpha", Limit: 4, Cursor: p.Next})
	require.NoError(t, err)
	require.Len(t, p.Messages, 3)
	require.Empty(t, p.Next)
	for _, m := range p.Messages {
		require.Equal(t, "alpha", m.BizID)
	}
}

func testCounts(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	cs, err := b.s.Counts(t.Context())
	require.NoError(t, err)
	require.Empty(t, cs)
	committedDue(t, b, "a", []string{"1", "2", "3"}, func(int) int32 { return 0 })
	b.apply(t, Prepare("a", "4", 0, b.now()), Rollback("b", "5", 0, b.now()), Rollback("b", "6", 0, b.now()))
	require.NoError(t, b.s.MarkSent(t.Context(), []store.Sent{{ID: b.get(t, "a", "1").ID}}))
	cs, err = b.s.Counts(t.Context())
	require.NoError(t, err)
	slices.SortFunc(cs, func(x, y store.Count) int {
		return cmpCount(x, y)
	})
	require.Equal(t, []store.Count{
		{BizID: "a", Status: state.Prepared, SendStatus: state.SendPending, N: 1},
		{BizID: "a", Status: state.Committed, SendStatus: state.SendPending, N: 2},
		{BizID: "a", Status: state.Committed, SendStatus: state.SendSent, N: 1},
		{BizID: "b", Status: state.RolledBack, SendStatus: state.SendPending, N: 2},
	}, cs)
}

func cmpCount(x, y store.Count) int {
	switch {
	case x.BizID != y.BizID:
		if x.BizID < y.BizID {
			return -1
		}
		return 1
	case x.Status != y.Status:
		return int(x.Status) - int(y.Status)
	default:
		return int(x.SendStatus) - int(y.SendStatus)
	}
}

func testOldestPrepared(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	got, err := b.s.OldestPrepared(t.Context())
	require.NoError(t, err)
	require.Empty(t, got)
	t0 := b.now()
	b.apply(t, Prepare("a", "1", 0, b.now()), Commit("c", "x", 0, b.now()))
	b.clock.Advance(time.Minute)
	b.apply(t, Prepare("a", "2", 0, b.now()), Prepare("b", "3", 0, b.now()))
	b.apply(t, Commit("a", "1", 0, b.now())) // no longer prepared
	got, err = b.s.OldestPrepared(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]time.Time{"a": t0.Add(time.Minute), "b": t0.Add(time.Minute)}, got)
}

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

func testPurge(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	// Terminal and old.
	b.apply(t, Prepare(biz, "rolled-old", 0, b.now()), Rollback(biz, "rolled-old", 0, b.now()))
	committedDue(t, b, biz, []string{"sent-old", "dead-old", "pending-old"}, func(int) int32 { return 0 })
	require.NoError(t, b.s.MarkSent(t.Context(), []store.Sent{{ID: b.get(t, biz, "sent-old").ID}}))
	b.apply(t, Event(biz, "dead-old", 0, state.Event{Kind: state.KindSendFailed, At: b.now(), Permanent: true}))
	b.apply(t, Prepare(biz, "prepared-old", 0, b.now()), Prepare(biz, "failed-old", 0, b.now()),
		Commit(biz, "nobody-old", 0, b.now()))
	b.apply(t, Event(biz, "failed-old", 0, state.Event{Kind: state.KindCheckParked, At: b.now()}))
	// An audited terminal message.
	b.apply(t, Prepare(biz, "audited-old", 0, b.now()))
	b.apply(t, Operator(biz, "audited-old", state.KindResolveRollback, b.now(), "ops"))
	b.clock.Advance(time.Hour)
	cutoff := b.now()
	// Terminal but recent.
	b.apply(t, Rollback(biz, "rolled-new", 0, b.now()))
	committedDue(t, b, biz, []string{"sent-new"}, func(int) int32 { return 0 })
	require.NoError(t, b.s.MarkSent(t.Context(), []store.Sent{{ID: b.get(t, biz, "sent-new").ID}}))

	n, err := b.s.Purge(t.Context(), cutoff, 2)
	require.NoError(t, err)
	require.Equal(t, 2, n, "limited")
	n, err = b.s.Purge(t.Context(), cutoff, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = b.s.Purge(t.Context(), cutoff, 100)
	require.NoError(t, err)
	require.Zero(t, n)
	for _, k := range []string{"rolled-old", "sent-old", "audited-old"} {
		_, err := b.s.Get(t.Context(), biz, k)
		require.ErrorIs(t, err, store.ErrNotFound, k)
	}
	audit, err := b.s.Audit(t.Context(), biz, "audited-old")
	require.NoError(t, err)
	require.Len(t, audit, 1, "audit records outlive the message (they have their own retention)")
	for _, k := range []string{"dead-old", "pending-old", "prepared-old", "failed-old", "nobody-old", "rolled-new", "sent-new"} {
		b.get(t, biz, k)
	}
}

// testMixedBatch checks that multi-row writes put every value in the right
// row and column: batches mixing inserts and updates of every kind, with
// values that differ from row to row, must leave exactly the rows that
// store.Fold computes in memory.
func testMixedBatch(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	at := func(i int) time.Time { return b.now().Add(time.Duration(i) * time.Millisecond) }
	body := func(i int) *state.Body {
		bd := &state.Body{Payload: []byte(fmt.Sprintf("p%d", i)), Topic: fmt.Sprintf("t%d", i%3),
			ForwardKey: fmt.Sprintf("f%d", i), Target: []string{"", "kafka", "rocket"}[i%3], Tag: fmt.Sprint(i % 2),
			Verify: "http://v/" + fmt.Sprint(i%4), CheckAfter: time.Duration(i) * time.Second}
		if i%4 == 0 {
			bd.Payload = nil
		}
		if i%5 != 0 {
			bd.Headers = []envelope.Header{{Key: "h", Value: []byte{byte(i)}}}
		}
		return bd
	}
	var first []store.Change
	for i := range 60 {
		k := fmt.Sprintf("m%02d", i)
		p := int32(i % 5)
		switch i % 6 {
		case 0:
			first = append(first, Event(biz, k, p, state.Event{Kind: state.KindPrepare, At: at(i), Body: body(i)}))
		case 1:
			first = append(first, Commit(biz, k, p, at(i)))
		case 2:
			first = append(first, Rollback(biz, k, p, at(i)))
		case 3:
			first = append(first, Event(biz, k, p, state.Event{Kind: state.KindPrepare, At: at(i), Body: body(i)}),
				Commit(biz, k, p, at(i)))
		case 4:
			first = append(first, Event(biz, k, p, state.Event{Kind: state.KindPrepare, At: at(i), Body: body(i)}),
				Event(biz, k, p, state.Event{Kind: state.KindCheckUnknown, At: at(i), RetryAt: at(1000 + i), MaxAttempts: 5, Err: fmt.Sprint("e", i)}))
		case 5:
			// left for the second batch: a new row there
		}
	}
	check := func(changes []store.Change) {
		t.Helper()
		loaded := map[store.MessageRef]*state.Message{}
		for _, r := range store.Refs(changes) {
			m, err := b.s.Get(t.Context(), r.BizID, r.Key)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			require.NoError(t, err)
			loaded[r] = &m
		}
		want := store.Fold(loaded, changes)
		res := b.apply(t, changes...)
		require.Len(t, res.Sendable, len(want.Sendable))
		// Each sendable carries its lease token (one per batch in one
		// database; one per shard's part in store/sharded).
		tokens := map[store.MessageRef]int64{}
		for _, m := range res.Sendable {
			require.NotZero(t, m.LeaseToken)
			tokens[store.MessageRef{BizID: m.BizID, Key: m.Key}] = m.LeaseToken
		}
		for _, m := range want.Sendable {
			m.LeaseToken = tokens[store.MessageRef{BizID: m.BizID, Key: m.Key}]
			m.SendNextAt = b.now().Add(lease)
		}
		for i, o := range res.Outcomes {
			require.Equal(t, want.Outcomes[i].Outcome, o.Outcome, "change %d", i)
		}
		for _, m := range append(want.Inserts, want.Updates...) {
			got := b.get(t, m.BizID, m.Key)
			if m.ID == 0 {
				require.NotZero(t, got.ID)
				m.ID = got.ID
			}
			if len(m.Payload) == 0 && len(got.Payload) == 0 {
				m.Payload = got.Payload // nil and empty both read back as empty
			}
			require.Equal(t, *m, got, "%s", m.Key)
		}
	}
	check(first)
	b.clock.Advance(time.Second)
	var second []store.Change
	for i := range 60 {
		k := fmt.Sprintf("m%02d", i)
		p := int32(i % 5)
		switch i % 6 {
		case 0:
			second = append(second, Commit(biz, k, p, at(i)))
		case 1:
			second = append(second, Event(biz, k, p, state.Event{Kind: state.KindPrepare, At: at(i), Body: body(i)}))
		case 2:
			second = append(second, Event(biz, k, p, state.Event{Kind: state.KindPrepare, At: at(i), Body: body(i)}),
				Commit(biz, k, p, at(i)))
		case 3:
			second = append(second, Event(biz, k, p, state.Event{Kind: state.KindSendFailed, At: at(i),
				RetryAt: at(2000 + i), MaxAttempts: 3, Err: fmt.Sprint("s", i)}))
		case 4:
			second = append(second, Event(biz, k, p, state.Event{Kind: state.KindCheckUnknown, At: at(i),
				RetryAt: at(3000 + i), MaxAttempts: 2, Err: fmt.Sprint("u", i)}))
		case 5:
			second = append(second, Event(biz, k, p, state.Event{Kind: state.KindPrepare, At: at(i), Body: body(i)}))
		}
	}
	check(second)
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

// testOrphanCommits: the gauge query counts COMMITTED rows without a body
// per bizID with the oldest creation time, and forgets a row once its body
// arrives or an operator closes it.
func testOrphanCommits(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	got, err := b.s.OrphanCommits(t.Context())
	require.NoError(t, err)
	require.Empty(t, got)
	t0 := b.now()
	b.apply(t, Commit("a", "1", 0, b.now()), Commit("b", "1", 1, b.now()),
		Prepare("a", "prepared", 0, b.now()), Rollback("a", "rolled", 0, b.now()))
	committedDue(t, b, "a", []string{"with-body"}, func(int) int32 { return 0 })
	b.clock.Advance(time.Minute)
	b.apply(t, Commit("a", "2", 2, b.now()), Commit("b", "2", 0, b.now()))
	got, err = b.s.OrphanCommits(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]store.OrphanStat{"a": {N: 2, Oldest: t0}, "b": {N: 2, Oldest: t0}}, got)

	// The body of a/1 arrives; b/1 is closed by an operator.
	b.apply(t, Prepare("a", "1", 0, b.now()))
	b.apply(t, Operator("b", "1", state.KindCloseOrphan, b.now(), "ops"))
	got, err = b.s.OrphanCommits(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[string]store.OrphanStat{"a": {N: 1, Oldest: t0.Add(time.Minute)}, "b": {N: 1, Oldest: t0.Add(time.Minute)}}, got)
}

// testListOrphans: Filter.Orphan lists exactly the COMMITTED rows without a
// body, combined with the other filters and paged.
func testListOrphans(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.apply(t, Commit(biz, "o-1", 0, b.now()), Commit("other", "o-2", 0, b.now()),
		Prepare(biz, "prepared", 0, b.now()), Rollback(biz, "rolled", 0, b.now()))
	committedDue(t, b, biz, []string{"with-body"}, func(int) int32 { return 0 })
	b.clock.Advance(time.Hour)
	b.apply(t, Commit(biz, "o-3", 0, b.now()))
	keys := func(f store.Filter) []string {
		t.Helper()
		var out []string
		for {
			p, err := b.s.List(t.Context(), f)
			require.NoError(t, err)
			for _, m := range p.Messages {
				require.True(t, m.Orphan(), m.Key)
				out = append(out, m.BizID+":"+m.Key)
			}
			if p.Next == "" {
				return out
			}
			f.Cursor = p.Next
		}
	}
	require.Equal(t, []string{biz + ":o-3", "other:o-2", biz + ":o-1"}, keys(store.Filter{Orphan: true}))
	require.Equal(t, []string{biz + ":o-3", "other:o-2", biz + ":o-1"}, keys(store.Filter{Orphan: true, Limit: 1}))
	require.Equal(t, []string{biz + ":o-3", biz + ":o-1"}, keys(store.Filter{Orphan: true, BizID: biz}))
	require.Equal(t, []string{"other:o-2", biz + ":o-1"}, keys(store.Filter{Orphan: true, CreatedBefore: b.now().Add(-time.Minute)}))
	require.Equal(t, []string{biz + ":o-1"}, keys(store.Filter{Orphan: true, KeyContains: "-1"}))
	// Status and Orphan together: an orphan is COMMITTED, never PREPARED.
	require.Empty(t, keys(store.Filter{Orphan: true, Status: state.Prepared}))
	require.Len(t, keys(store.Filter{Orphan: true, Status: state.Committed}), 3)
}

// testAddAudit: an audit record that changes no row is read back with the
// message's others, in order, and stays when the message is purged.
func testAddAudit(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.apply(t, Commit(biz, key, 0, b.now()))
	e := store.AuditEntry{BizID: biz, Key: key, Action: "dlq_replay", Who: "alice", Reason: "fixed the topic",
		At: b.now(), Before: "COMMITTED", After: "COMMITTED"}
	require.NoError(t, b.s.AddAudit(t.Context(), e))
	b.clock.Advance(time.Second)
	b.apply(t, Operator(biz, key, state.KindCloseOrphan, b.now(), "bob"))
	audit, err := b.s.Audit(t.Context(), biz, key)
	require.NoError(t, err)
	require.Len(t, audit, 2)
	require.Equal(t, e, audit[0])
	require.Equal(t, "close_orphan", audit[1].Action)
	require.Equal(t, "ROLLED_BACK", audit[1].After)

	b.clock.Advance(time.Hour)
	n, err := b.s.Purge(t.Context(), b.now(), 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	audit, err = b.s.Audit(t.Context(), biz, key)
	require.NoError(t, err)
	require.Len(t, audit, 2, "the message is gone, its audit records stay")
}

// testAuditLog: AuditLog lists every message's audit records newest first,
// filtered by bizID and time and paged by ID; PurgeAudit removes the old
// ones, oldest first, up to its limit, and only them.
func testAuditLog(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	other := biz + "-other"
	add := func(bizID, key, action string) {
		require.NoError(t, b.s.AddAudit(t.Context(), store.AuditEntry{BizID: bizID, Key: key, Action: action,
			Who: "alice", Reason: "r", At: b.now(), Before: "COMMITTED", After: "COMMITTED"}))
	}
	// Records a millisecond apart: "newest first" among records of one
	// instant is defined by one database's IDs only (store/sharded merges
	// several databases by time).
	add(biz, "a", "dlq_replay")
	b.clock.Advance(time.Millisecond)
	add(other, "b", "dlq_replay")
	b.clock.Advance(time.Hour)
	mid := b.now()
	b.apply(t, Prepare(biz, "c", 0, b.now()))
	b.apply(t, Operator(biz, "c", state.KindResolveRollback, b.now(), "bob"))
	b.clock.Advance(time.Millisecond)
	add(other, "d", "dlq_replay")

	all, err := b.s.AuditLog(t.Context(), store.AuditQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, all, 4)
	keys := func(es []store.AuditEntry) []string {
		var out []string
		for _, e := range es {
			require.Positive(t, e.ID)
			out = append(out, e.Key)
		}
		return out
	}
	require.Equal(t, []string{"d", "c", "b", "a"}, keys(all), "newest first")
	require.Equal(t, "bob", all[1].Who)
	require.Equal(t, "ROLLED_BACK", all[1].After)

	page, err := b.s.AuditLog(t.Context(), store.AuditQuery{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"d", "c"}, keys(page))
	page, err = b.s.AuditLog(t.Context(), store.AuditQuery{Limit: 2, BeforeID: page[1].ID})
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a"}, keys(page))
	page, err = b.s.AuditLog(t.Context(), store.AuditQuery{Limit: 10, BizID: other})
	require.NoError(t, err)
	require.Equal(t, []string{"d", "b"}, keys(page))
	page, err = b.s.AuditLog(t.Context(), store.AuditQuery{Limit: 10, Since: mid})
	require.NoError(t, err)
	require.Equal(t, []string{"d", "c"}, keys(page))
	_, err = b.s.AuditLog(t.Context(), store.AuditQuery{})
	require.Error(t, err, "a limit is required")

	n, err := b.s.PurgeAudit(t.Context(), mid, 1)
	require.NoError(t, err)
	require.Equal(t, 1, n, "limited")
	n, err = b.s.PurgeAudit(t.Context(), mid, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = b.s.PurgeAudit(t.Context(), mid, 10)
	require.NoError(t, err)
	require.Zero(t, n)
	all, err = b.s.AuditLog(t.Context(), store.AuditQuery{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"d", "c"}, keys(all), "only the old records went")
	_, err = b.s.PurgeAudit(t.Context(), mid, 0)
	require.Error(t, err)
}
