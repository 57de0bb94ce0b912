package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/stretchr/testify/require"
)

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
