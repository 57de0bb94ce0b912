package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// preparedKeys PREPAREs keys of bizID in partitions 0 and 1 in turn, a
// millisecond apart from the clock's time on, and returns them.
func (b *bundle) preparedKeys(t *testing.T, bizID string, n int) []string {
	t.Helper()
	keys := Keys(bizID, n)
	var cs []store.Change
	for i, k := range keys {
		cs = append(cs, Prepare(bizID, k, int32(i%2), b.now().Add(time.Duration(i)*time.Millisecond)))
	}
	b.apply(t, cs...)
	return keys
}

// countByBiz counts claimed messages per bizID and checks the claim's
// lease and attempt on each.
func countByBiz(t *testing.T, ms []state.Message) map[string]int {
	t.Helper()
	n := map[string]int{}
	seen := map[int64]bool{}
	for _, m := range ms {
		require.False(t, seen[m.ID], "claimed twice in one claim: %s/%s", m.BizID, m.Key)
		seen[m.ID] = true
		require.Equal(t, state.Prepared, m.Status)
		require.Equal(t, 1, m.VerifyAttempts, "the fair claim counts the attempt")
		require.NotZero(t, m.LeaseToken)
		n[m.BizID]++
	}
	return n
}

// A bizID with a large backlog of older stale PREPAREs takes only its
// share of a fair claim: a newer bizID's check-backs are in the first
// claim, not behind the backlog. Unfair, the same claim takes
// the backlog only.
func testFairCheckbackClaim(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.preparedKeys(t, "noisy", 60)
	b.clock.Advance(time.Second)
	b.preparedKeys(t, "quiet", 5)
	b.clock.Advance(2 * time.Minute)
	parts := []int32{0, 1}

	unfair, err := b.s.ClaimCheckbacks(t.Context(), store.Claim{Partitions: parts, Limit: 20, Lease: time.Minute})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"noisy": 20}, countByBiz(t, unfair), "oldest first: the backlog fills the claim")

	b = setup(t, newStore)
	noisy := b.preparedKeys(t, "noisy", 60)
	b.clock.Advance(time.Second)
	b.preparedKeys(t, "quiet", 5)
	b.clock.Advance(2 * time.Minute)
	fair := store.Claim{Partitions: parts, Limit: 20, Lease: time.Minute, FairCheckbacks: &store.Fair{}}
	got, err := b.s.ClaimCheckbacks(t.Context(), fair)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"noisy": 15, "quiet": 5}, countByBiz(t, got), "quiet's check-backs all fit in its share")
	// Within a bizID, the oldest due first: noisy's first 15 keys on a
	// single store; a sharded one takes each shard's oldest, which are
	// among the older half.
	older := map[string]bool{}
	for _, k := range noisy[:30] {
		older[k] = true
	}
	for _, m := range got {
		if m.BizID == "noisy" {
			require.True(t, older[m.Key], "%s claimed before older ones", m.Key)
		}
	}

	// Alone, a bizID takes the whole claim (batching is kept), and the
	// leased ones are not claimed again.
	got, err = b.s.ClaimCheckbacks(t.Context(), fair)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"noisy": 20}, countByBiz(t, got))
	fair.Limit = 100
	got, err = b.s.ClaimCheckbacks(t.Context(), fair)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"noisy": 25}, countByBiz(t, got), "what is left")
}

// Weights split a fair claim; a partition not asked for is not claimed
// from, and a bizID whose check-backs are not due yet takes nothing.
func testFairCheckbackWeights(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.preparedKeys(t, "heavy", 40)
	b.preparedKeys(t, "light", 40)
	b.apply(t, Prepare("elsewhere", "k", 2, b.now()))
	b.clock.Advance(2 * time.Minute)
	b.preparedKeys(t, "later", 10) // due in a minute
	fair := store.Claim{Partitions: []int32{0, 1}, Limit: 20, Lease: time.Minute,
		FairCheckbacks: &store.Fair{Weights: map[string]int{"heavy": 3}}}
	got, err := b.s.ClaimCheckbacks(t.Context(), fair)
	require.NoError(t, err)
	// 15 and 5; a sharded store splits the claim between its shards and
	// each shard by weight, so the rounding may move up to one per shard
	// (three in the suite). Oldest first would give 20 and 0 or 10 and 10.
	n := countByBiz(t, got)
	require.Len(t, n, 2, "only the due bizIDs of the claimed partitions: %v", n)
	require.Equal(t, 20, n["heavy"]+n["light"])
	require.InDelta(t, 15, n["heavy"], 3, "%v", n)

	// An odd split gives its remainder to the older due (then the lower
	// id), so over claims it evens out; a bizID capped at 0 takes none.
	fair.FairCheckbacks = &store.Fair{}
	fair.Limit = 5
	first := map[string]int{}
	for range 2 {
		got, err := b.s.ClaimCheckbacks(t.Context(), fair)
		require.NoError(t, err)
		n := countByBiz(t, got)
		require.Equal(t, 5, n["heavy"]+n["light"])
		for id, k := range n {
			first[id] += k
		}
	}
	require.Equal(t, 10, first["heavy"]+first["light"])
	require.InDelta(t, 5, first["heavy"], 1, "the remainder went to each in turn: %v", first)
	fair.FairCheckbacks = &store.Fair{Max: map[string]int{"heavy": 0}}
	got, err = b.s.ClaimCheckbacks(t.Context(), fair)
	require.NoError(t, err)
	n = countByBiz(t, got)
	require.Zero(t, n["heavy"], "heavy is capped at 0: %v", n)
	require.Positive(t, n["light"], "light takes the claim: %v", n)
}
