package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// ExerciseFair runs the fair-claim suite (store.Fair, docs/fairness.md) against the
// store newStore makes. The results are exact: a store that splits a claim
// (a sharded store of several shards) runs it with one shard and checks
// its own split apart.
func ExerciseFair(t *testing.T, newStore NewStore) {
	t.Helper()
	t.Run("SharesTheLimit", func(t *testing.T) { t.Parallel(); testFairShares(t, newStore) })
	t.Run("Weights", func(t *testing.T) { t.Parallel(); testFairWeights(t, newStore) })
	t.Run("UnusedShareCarriesOver", func(t *testing.T) { t.Parallel(); testFairCarryOver(t, newStore) })
	t.Run("Caps", func(t *testing.T) { t.Parallel(); testFairCaps(t, newStore) })
	t.Run("PartitionsAndDueTimes", func(t *testing.T) { t.Parallel(); testFairDue(t, newStore) })
	t.Run("Ordered", func(t *testing.T) { t.Parallel(); testFairOrdered(t, newStore) })
	t.Run("DrainsEverything", func(t *testing.T) { t.Parallel(); testFairDrains(t, newStore) })
	t.Run("SendBacklog", func(t *testing.T) { t.Parallel(); testSendBacklog(t, newStore) })
	t.Run("ForwardHeld", func(t *testing.T) { t.Parallel(); testForwardHeld(t, newStore) })
}

// testForwardHeld: a message ApplyRequest.Forward reports held is written
// due now and not leased, returned neither sent nor sendable, and the next
// claim takes it.
func testForwardHeld(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	forward := func(_ context.Context, msgs []state.Message) []store.Forwarded {
		out := make([]store.Forwarded, len(msgs))
		for i, m := range msgs {
			switch m.Key {
			case "held":
				out[i] = store.Forwarded{Held: true}
			case "sent":
				out[i] = store.Forwarded{Sent: true, Ref: "r"}
			}
		}
		return out
	}
	res, err := b.s.Apply(t.Context(), store.ApplyRequest{SendLease: lease, Forward: forward, Changes: []store.Change{
		Prepare(biz, "held", 0, b.now()), Commit(biz, "held", 0, b.now()),
		Prepare(biz, "sent", 1, b.now()), Commit(biz, "sent", 1, b.now()),
		Prepare(biz, "left", 2, b.now()), Commit(biz, "left", 2, b.now()),
	}})
	require.NoError(t, err)
	require.Equal(t, []string{"left"}, sortedKeys(res.Sendable))
	require.Equal(t, []string{"sent"}, sortedKeys(res.Forwarded))
	h := b.get(t, biz, "held")
	require.True(t, h.Sendable())
	require.Equal(t, b.now(), h.SendNextAt, "due now, not leased")
	require.Zero(t, h.SendAttempts)
	n, got := b.claimFair(t, 10, &store.Fair{}, false, 0, 1, 2)
	require.Equal(t, map[string]int{biz: 1}, n, "the leased one waits for its lease")
	require.Equal(t, "held", got[0].Key)
}

// testSendBacklog: store.Backlogger counts pending, due (not leased) and
// the oldest due time per bizID.
func testSendBacklog(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	bl, ok := b.s.(store.Backlogger)
	if !ok {
		t.Skip("not a store.Backlogger")
	}
	first := b.now()
	b.backlog(t, "big", 30)
	b.backlog(t, "small", 4)
	b.apply(t, Prepare("leased", "k", 0, b.now()), Commit("leased", "k", 0, b.now())) // leased for the fast path
	b.apply(t, Prepare("open", "k", 0, b.now()))                                      // not committed: no send
	_, _ = b.claimFair(t, 10, &store.Fair{Max: map[string]int{"small": 0}}, false)    // 10 of big leased
	got, err := bl.SendBacklog(t.Context())
	require.NoError(t, err)
	byBiz := map[string]store.BizBacklog{}
	for _, x := range got {
		byBiz[x.BizID] = x
	}
	require.Len(t, byBiz, 3, "%+v", got)
	require.Equal(t, int64(30), byBiz["big"].Pending)
	require.Equal(t, int64(20), byBiz["big"].Due)
	require.Equal(t, int64(4), byBiz["small"].Due)
	require.Equal(t, int64(1), byBiz["leased"].Pending)
	require.Zero(t, byBiz["leased"].Due)
	require.True(t, byBiz["leased"].OldestDue.IsZero())
	require.True(t, byBiz["small"].OldestDue.After(first))
	require.False(t, byBiz["small"].OldestDue.After(b.now()))
	require.True(t, byBiz["big"].OldestDue.Before(byBiz["small"].OldestDue), "big's oldest due row is older")
}

// fairParts are the partitions the fair tests spread rows over.
var fairParts = []int32{0, 1, 2, 3}

// backlog commits n messages of biz, due at once (no send lease), spread
// over fairParts, one clock tick each so that their due times are
// distinct and in key order; it returns the keys.
func (b *bundle) backlog(t *testing.T, biz string, n int) []string {
	t.Helper()
	keys := Keys(biz, n)
	const per = 200
	for lo := 0; lo < n; lo += per {
		var cs []store.Change
		for i := lo; i < min(lo+per, n); i++ {
			p := fairParts[i%len(fairParts)]
			cs = append(cs, Prepare(biz, keys[i], p, b.now()), Commit(biz, keys[i], p, b.now()))
		}
		b.applyDue(t, cs...)
		b.clock.Advance(time.Millisecond)
	}
	return keys
}

// claimFair claims with f and returns how many rows each bizID got, and
// the keys.
func (b *bundle) claimFair(t *testing.T, limit int, f *store.Fair, ordered bool, parts ...int32) (map[string]int, []state.Message) {
	t.Helper()
	if len(parts) == 0 {
		parts = fairParts
	}
	got, err := b.s.ClaimSends(t.Context(), store.Claim{Partitions: parts, Limit: limit, Lease: time.Hour, Ordered: ordered, FairSends: f})
	require.NoError(t, err)
	n := map[string]int{}
	for _, m := range got {
		n[m.BizID]++
		require.NotZero(t, m.LeaseToken)
		require.Equal(t, b.now().Add(time.Hour), m.SendNextAt, "%s is returned leased", m.Key)
	}
	return n, got
}

// testFairShares: a flood of one bizID, committed first, takes only its
// share of a fair claim; the plain claim still takes the oldest first. Each
// bizID's rows come oldest first.
func testFairShares(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	a := b.backlog(t, "flood", 300)
	q := b.backlog(t, "quiet", 20)
	c := b.backlog(t, "third", 3)

	n, got := b.claimFair(t, 30, &store.Fair{}, false)
	// Rounds 1–3 take one of each (9), then flood and quiet alternate.
	require.Equal(t, map[string]int{"flood": 14, "quiet": 13, "third": 3}, n)
	require.ElementsMatch(t, append(append(a[:14:14], q[:13]...), c...), keysOf(got), "each bizID's oldest")

	// The plain claim is unchanged: the oldest due first (rows due at the
	// same time in any order).
	plain, err := b.s.ClaimSends(t.Context(), store.Claim{Partitions: fairParts, Limit: 10, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, plain, 10)
	for _, m := range plain {
		require.Equal(t, "flood", m.BizID, "the plain claim takes the oldest: %s", m.Key)
	}
}

// testFairWeights: weight 3 against 1 takes three rows to one.
func testFairWeights(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.backlog(t, "heavy", 100)
	b.backlog(t, "light", 100)
	n, _ := b.claimFair(t, 40, &store.Fair{Weights: map[string]int{"heavy": 3}}, false)
	require.Equal(t, map[string]int{"heavy": 30, "light": 10}, n)
	n, _ = b.claimFair(t, 40, &store.Fair{Weights: map[string]int{"heavy": 1, "light": 4}}, false)
	require.Equal(t, map[string]int{"heavy": 8, "light": 32}, n)
}

// testFairCarryOver: what a bizID does not use goes to the others in the
// same claim: the claim is full while rows are due.
func testFairCarryOver(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.backlog(t, "big", 100)
	b.backlog(t, "small", 2)
	n, _ := b.claimFair(t, 50, &store.Fair{}, false)
	require.Equal(t, map[string]int{"big": 48, "small": 2}, n)
	n, _ = b.claimFair(t, 50, &store.Fair{}, false)
	require.Equal(t, map[string]int{"big": 50}, n, "alone, a bizID takes the whole claim")
}

// testFairCaps: Max caps a bizID's rows (0: none); the rest of the claim
// goes to the others; capped rows stay due for a later claim.
func testFairCaps(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.backlog(t, "capped", 50)
	b.backlog(t, "stopped", 50)
	b.backlog(t, "free", 50)
	f := &store.Fair{Max: map[string]int{"capped": 4, "stopped": 0}}
	n, _ := b.claimFair(t, 30, f, false)
	require.Equal(t, map[string]int{"capped": 4, "free": 26}, n)
	n, _ = b.claimFair(t, 30, f, false)
	require.Equal(t, map[string]int{"capped": 4, "free": 24}, n, "free has 24 left")
	n, _ = b.claimFair(t, 100, &store.Fair{}, false)
	require.Equal(t, map[string]int{"capped": 42, "stopped": 50}, n, "held back, not lost")
}

// testFairDue: only due rows of the claimed partitions count: a bizID's
// scheduled rows and its rows in other partitions take no share.
func testFairDue(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	var cs []store.Change
	for i, k := range Keys("later", 20) {
		p := fairParts[i%len(fairParts)]
		cs = append(cs, Scheduled("later", k, p, b.now(), b.now().Add(time.Hour), ""), Commit("later", k, p, b.now()))
	}
	b.applyDue(t, cs...)
	b.backlog(t, "now", 20)
	n, got := b.claimFair(t, 10, &store.Fair{}, false, 1)
	require.Equal(t, map[string]int{"now": 5}, n, "partition 1 holds 5 due rows")
	for _, m := range got {
		require.Equal(t, int32(1), m.Partition)
	}
	b.clock.Advance(time.Hour)
	n, _ = b.claimFair(t, 10, &store.Fair{}, false)
	require.Equal(t, map[string]int{"later": 5, "now": 5}, n, "scheduled rows take their share once due")
}

// testFairOrdered: with Ordered, a bizID's messages held back by their
// order key are skipped by the fair claim as by the plain one.
func testFairOrdered(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	var cs []store.Change
	for _, k := range Keys("seq", 5) {
		cs = append(cs, PrepareOrdered("ord", k, "one-key", 0, b.now()), Commit("ord", k, 0, b.now()))
	}
	b.applyDue(t, cs...)
	b.backlog(t, "plain", 10)
	n, got := b.claimFair(t, 4, &store.Fair{}, true)
	require.Equal(t, map[string]int{"ord": 1, "plain": 3}, n, "only the key's head is free")
	for _, m := range got {
		if m.BizID == "ord" {
			require.Equal(t, "seq-00000", m.Key)
		}
	}
}

// testFairDrains: claims in turn take every due row once.
func testFairDrains(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	want := map[string]bool{}
	for i, n := range []int{120, 7, 33} {
		for _, k := range b.backlog(t, fmt.Sprintf("biz%d", i), n) {
			want[fmt.Sprintf("biz%d/%s", i, k)] = true
		}
	}
	seen := map[string]bool{}
	for range 20 {
		_, got := b.claimFair(t, 16, &store.Fair{Weights: map[string]int{"biz1": 2}}, false)
		if len(got) == 0 {
			break
		}
		for _, m := range got {
			id := m.BizID + "/" + m.Key
			require.False(t, seen[id], "%s claimed twice", id)
			seen[id] = true
		}
	}
	require.Equal(t, want, seen)
}

func keysOf(ms []state.Message) []string {
	ks := make([]string, len(ms))
	for i, m := range ms {
		ks[i] = m.Key
	}
	return ks
}
