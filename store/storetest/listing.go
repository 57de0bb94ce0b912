package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/stretchr/testify/require"
)

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
	// Oldest is the creation time of the group's oldest message.
	for i := range cs {
		require.WithinDuration(t, b.now(), cs[i].Oldest, time.Second, "oldest of %+v", cs[i])
		cs[i].Oldest = time.Time{}
	}
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
