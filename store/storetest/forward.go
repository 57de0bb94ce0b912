package storetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/stretchr/testify/require"
)

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
		// A claim may come back empty while due rows remain: SKIP LOCKED
		// passes over the rows a concurrent claim holds, and that claim
		// may find them leased already. So a worker's empty claim does
		// not prove that the partitions are drained: claim what is left.
		for {
			got, err := claimFn(store.Claim{Partitions: []int32{0, 1, 2}, Limit: 7, Lease: time.Hour})
			require.NoError(t, err)
			if len(got) == 0 {
				break
			}
			for _, m := range got {
				seen[m.ID]++
			}
		}
		require.Len(t, seen, n, "every message claimed")
		for id, c := range seen {
			require.Equal(t, 1, c, "message %d claimed %d times", id, c)
		}
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
