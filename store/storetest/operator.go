package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/stretchr/testify/require"
)

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
