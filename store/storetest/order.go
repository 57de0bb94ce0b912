package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// PrepareOrdered returns a PREPARE change whose body carries an order key.
func PrepareOrdered(biz, key, orderKey string, partition int32, at time.Time) store.Change {
	c := Prepare(biz, key, partition, at)
	c.Event.Body.OrderKey = orderKey
	return c
}

// ExerciseOrder runs the per-key order suite (docs/ordering.md) against the store
// newStore makes: sequences in commit order, and the claim rule in the
// claims and in Apply's fast path (Claim.Ordered, ApplyRequest.Ordered).
func ExerciseOrder(t *testing.T, newStore NewStore) {
	t.Helper()
	t.Run("SequenceIsCommitOrder", func(t *testing.T) { t.Parallel(); testSequenceIsCommitOrder(t, newStore) })
	t.Run("ConcurrentCommitsOfOneKey", func(t *testing.T) { t.Parallel(); testConcurrentSequences(t, newStore) })
	t.Run("LeaseExpiresWhileLaterIsDue", func(t *testing.T) { t.Parallel(); testOrderLeaseExpiry(t, newStore) })
	t.Run("HeadOnAnotherPartition", func(t *testing.T) { t.Parallel(); testOrderOtherPartition(t, newStore) })
	t.Run("HeadDeadHolds", func(t *testing.T) { t.Parallel(); testOrderDeadHolds(t, newStore) })
	t.Run("HeadDeadReleases", func(t *testing.T) { t.Parallel(); testOrderDeadReleases(t, newStore) })
	t.Run("RetryingHeadHolds", func(t *testing.T) { t.Parallel(); testOrderRetries(t, newStore) })
	t.Run("InlineSendSkipsSequenced", func(t *testing.T) { t.Parallel(); testOrderInline(t, newStore) })
	t.Run("OperatorCloseAndRelease", func(t *testing.T) { t.Parallel(); testOrderOperator(t, newStore) })
	t.Run("QueuesAreIndependent", func(t *testing.T) { t.Parallel(); testOrderQueues(t, newStore) })
	t.Run("BlockedKeys", func(t *testing.T) { t.Parallel(); testBlockedKeys(t, newStore) })
	t.Run("ParkAndWake", func(t *testing.T) { t.Parallel(); testOrderWake(t, newStore) })
	t.Run("WakeAfterCheckbackClaim", func(t *testing.T) { t.Parallel(); testOrderWakeAfterCheckback(t, newStore) })
	t.Run("ClaimNextWithTheSentMark", func(t *testing.T) { t.Parallel(); testOrderClaimNext(t, newStore) })
	t.Run("ClaimRun", func(t *testing.T) { t.Parallel(); testOrderClaimRun(t, newStore) })
	t.Run("ClaimNextRun", func(t *testing.T) { t.Parallel(); testOrderClaimNextRun(t, newStore) })
}

// allParts are the partitions the order tests use.
var allParts = []int32{0, 1, 2, 3}

func (b *bundle) claimOrdered(t *testing.T, parts ...int32) []string {
	t.Helper()
	if len(parts) == 0 {
		parts = allParts
	}
	got, err := b.s.ClaimSends(t.Context(), store.Claim{Partitions: parts, Limit: 100, Lease: lease, Ordered: true})
	require.NoError(t, err)
	return sortedKeys(got)
}

func sortedKeys(ms []state.Message) []string {
	ks := []string{}
	for _, m := range ms {
		ks = append(ks, m.Key)
	}
	slices.Sort(ks)
	return ks
}

// applyOrdered applies changes as the center does with ordering on.
func (b *bundle) applyOrdered(t *testing.T, changes ...store.Change) store.ApplyResult {
	t.Helper()
	res, err := b.s.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: lease, Ordered: true})
	require.NoError(t, err)
	for i, o := range res.Outcomes {
		require.NoError(t, o.Err, "change %d", i)
	}
	return res
}

// commitOrdered prepares and commits keys of order key ok in order, one
// batch each, key i on partition part(i); it returns the Apply results.
func (b *bundle) commitOrdered(t *testing.T, ok string, keys []string, part func(int) int32) []store.ApplyResult {
	t.Helper()
	var out []store.ApplyResult
	for i, k := range keys {
		b.applyOrdered(t, PrepareOrdered(biz, k, ok, part(i), b.now()))
		out = append(out, b.applyOrdered(t, Commit(biz, k, part(i), b.now())))
	}
	return out
}

// markSent marks keys sent as the forwarder does (Ordered for a message
// with a sequence: the store wakes the next one of its key).
func (b *bundle) markSent(t *testing.T, keys ...string) {
	t.Helper()
	var sent []store.Sent
	for _, k := range keys {
		m := b.get(t, biz, k)
		sent = append(sent, store.Sent{ID: m.ID, Ref: "ref/" + k, Ordered: m.OrderSeq > 0})
	}
	require.NoError(t, b.s.MarkSent(t.Context(), sent))
}

func part0(int) int32 { return 0 }

// Sequences are assigned when the COMMIT is applied, in that order, not in
// PREPARE order; within a batch in change order; a COMMIT that comes
// before its PREPARE is sequenced when the body arrives (the message
// becomes sendable then). Messages without an order key stay at 0.
func testSequenceIsCommitOrder(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		b.apply(t, PrepareOrdered(biz, k, "o-1", 1, b.now()))
	}
	b.apply(t, Prepare(biz, "plain", 1, b.now()), Commit(biz, "plain", 1, b.now()))
	b.apply(t, Commit(biz, "c", 1, b.now()))
	b.apply(t, Commit(biz, "a", 1, b.now()))
	b.apply(t, Commit(biz, "e", 1, b.now()), Commit(biz, "b", 1, b.now()))
	b.apply(t, Commit(biz, "late", 2, b.now()))
	b.apply(t, PrepareOrdered(biz, "late", "o-1", 2, b.now()))
	b.apply(t, Commit(biz, "d", 1, b.now()))
	want := map[string]int64{"c": 1, "a": 2, "e": 3, "b": 4, "late": 5, "d": 6, "plain": 0}
	for k, seq := range want {
		m := b.get(t, biz, k)
		require.Equal(t, seq, m.OrderSeq, "%s", k)
		if k != "plain" {
			require.Equal(t, "o-1", m.OrderKey, "%s", k)
		}
	}
	// Replaying a COMMIT does not sequence again.
	b.apply(t, Commit(biz, "c", 1, b.now()))
	require.Equal(t, int64(1), b.get(t, biz, "c").OrderSeq)
}

// Commits of one key applied concurrently (several centers, different
// partitions) never get the same sequence.
func testConcurrentSequences(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	const workers, each = 4, 10
	var keys []string
	for w := range workers {
		for i := range each {
			k := fmt.Sprintf("w%d-%02d", w, i)
			keys = append(keys, k)
			b.apply(t, PrepareOrdered(biz, k, "hot", int32(w), b.now()))
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				k := fmt.Sprintf("w%d-%02d", w, i)
				_, err := b.s.Apply(context.Background(), store.ApplyRequest{SendLease: lease, Ordered: true,
					Changes: []store.Change{Commit(biz, k, int32(w), b.now())}})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	seen := map[int64]string{}
	for _, k := range keys {
		seq := b.get(t, biz, k).OrderSeq
		require.Positive(t, seq, k)
		require.Empty(t, seen[seq], "%s and %s got sequence %d", seen[seq], k, seq)
		seen[seq] = k
	}
	require.Len(t, seen, workers*each)
	for seq := int64(1); seq <= workers*each; seq++ {
		require.NotEmpty(t, seen[seq], "sequence %d missing", seq)
	}
}

// The head is leased (handed to a forwarder that died); the later message
// is due but held, by the claims (ordered) and the fast path alike; when the
// head's lease expires the claim takes the head, not the later one; once
// the head is sent the later one goes.
func testOrderLeaseExpiry(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	res := b.commitOrdered(t, "o-1", []string{"a", "b"}, part0)
	require.Equal(t, []string{"a"}, sortedKeys(res[0].Sendable), "the head is handed out at once")
	require.Empty(t, res[1].Sendable, "the later one is held, not leased")
	mb := b.get(t, biz, "b")
	require.True(t, mb.Sendable())
	require.Equal(t, b.now().Add(lease), mb.SendNextAt, "held: parked (unleased) until its send lease, woken when a is sent")

	require.Empty(t, b.claimOrdered(t), "head leased, the later one held")
	b.clock.Advance(lease + time.Second)
	// Today's rule without order would take b too: the difference.
	got, err := b.s.ClaimSends(t.Context(), store.Claim{Partitions: allParts, Limit: 10, Lease: lease})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, sortedKeys(got), "an unordered claim takes the due later message")

	b2 := setup(t, newStore) // the same with the ordered claim only
	b2.commitOrdered(t, "o-1", []string{"a", "b"}, part0)
	b2.clock.Advance(lease + time.Second)
	require.Equal(t, []string{"a"}, b2.claimOrdered(t), "the lease expired: the head again, never the later one")
	require.Empty(t, b2.claimOrdered(t), "head re-leased")
	b2.markSent(t, "a")
	require.Equal(t, []string{"b"}, b2.claimOrdered(t), "head sent: the next one is woken and goes at once")
}

// A held message is parked; the head's sent mark wakes the next one only
// (the one after it stays parked), and a sent mark without Ordered wakes
// nothing: it waits for its park.
func testOrderWake(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.commitOrdered(t, "o-1", []string{"a", "b", "c"}, part0)
	b.markSent(t, "a")
	require.Equal(t, []string{"b"}, b.claimOrdered(t))
	mc := b.get(t, biz, "c")
	require.True(t, mc.SendNextAt.After(b.now()), "c stays parked while b holds")
	// b's mark without Ordered (an older forwarder) wakes nothing.
	require.NoError(t, b.s.MarkSent(t.Context(), []store.Sent{{ID: b.get(t, biz, "b").ID, Ref: "r"}}))
	require.Empty(t, b.claimOrdered(t), "c is free but parked")
	b.clock.Advance(lease)
	require.Equal(t, []string{"c"}, b.claimOrdered(t), "due at the end of its park")
}

// A message whose PREPARE a check-back claim leased (its row keeps that
// lease token) and whose COMMIT then comes while the head holds is parked
// unleased, so the head's sent mark wakes it: with the check-back's token
// left on the row the wake took it for a head being sent and left it to
// its park (30 s in ectools bench on a busy machine).
func testOrderWakeAfterCheckback(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.commitOrdered(t, "o-1", []string{"a"}, part0)
	b.applyOrdered(t, PrepareOrdered(biz, "b", "o-1", 0, b.now()))
	b.clock.Advance(2 * time.Minute) // past b's check-back delay
	claimed, err := b.s.ClaimCheckbacks(t.Context(), store.Claim{Partitions: allParts, Limit: 10, Lease: lease})
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, sortedKeys(claimed))
	res := b.applyOrdered(t, Commit(biz, "b", 0, b.now()))
	require.Empty(t, res.Sendable, "held behind a")
	mb := b.get(t, biz, "b")
	require.Zero(t, mb.LeaseToken, "parked unleased")
	require.True(t, mb.SendNextAt.After(b.now()), "parked")
	b.markSent(t, "a")
	require.Equal(t, []string{"b"}, b.claimOrdered(t), "a sent: b woken at once")
}

// store.NextClaimer: the head's sent mark leases the next message of its
// key when it is free and on a claimed partition, and only that one; on
// another partition it is woken for its owner's claim instead; a head
// that failed is left to its backoff. Stores without it skip.
func testOrderClaimNext(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	nc, ok := b.s.(store.NextClaimer)
	if !ok {
		t.Skip("the store does not implement store.NextClaimer (the forwarder marks sent and waits for the wake and its scan)")
	}
	woken := 0
	next := func(key string, parts ...int32) []string {
		t.Helper()
		m := b.get(t, biz, key)
		got, n, err := nc.MarkSentClaimNext(t.Context(), []store.Sent{{ID: m.ID, Ref: "ref/" + key, Ordered: true}},
			store.Claim{Partitions: parts, Limit: 100, Lease: lease})
		require.NoError(t, err)
		woken = n
		for _, g := range got {
			require.NotZero(t, g.LeaseToken, g.Key)
			require.Equal(t, b.now().Add(lease), g.SendNextAt, g.Key)
		}
		require.Equal(t, state.SendSent, b.get(t, biz, key).SendStatus, key)
		return sortedKeys(got)
	}
	b.commitOrdered(t, "o-1", []string{"a", "b", "c"}, func(i int) int32 { return []int32{0, 0, 1}[i] })
	require.Equal(t, []string{"b"}, next("a", 0, 1), "b leased with a's mark; c still held")
	require.Zero(t, woken)
	require.Empty(t, b.claimOrdered(t), "b leased, c held")
	require.Equal(t, b.now().Add(lease), b.get(t, biz, "c").SendNextAt, "c still parked")
	require.Empty(t, next("b", 0), "c is on partition 1, not claimed")
	require.Equal(t, 1, woken, "c woken for its partition's claims")
	require.Equal(t, []string{"c"}, b.claimOrdered(t, 1), "but woken for its owner's claim")

	// A repeated mark of w (its send was retried after a lease) while
	// the next one, x, failed: x waits for its backoff and the claims.
	b.commitOrdered(t, "o-2", []string{"w", "x"}, part0)
	b.markSent(t, "w")
	require.Equal(t, []string{"x"}, b.claimOrdered(t))
	b.failSend(t, "x", false, false)
	require.Empty(t, next("w", 0), "x failed: not taken")
	require.Zero(t, woken, "nor woken")
	mx := b.get(t, biz, "x")
	require.Equal(t, 1, mx.SendAttempts)
	require.True(t, mx.SendNextAt.After(b.now()), "x waits for its backoff")
}

// The head is on a partition the claimer does not own (another center's):
// the later message, on an owned partition, still waits for it.
func testOrderOtherPartition(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.commitOrdered(t, "o-1", []string{"a", "b"}, func(i int) int32 { return int32(1 + i) })
	b.clock.Advance(lease + time.Second)
	require.Empty(t, b.claimOrdered(t, 2), "b on partition 2 waits for a on partition 1")
	require.Equal(t, []string{"a"}, b.claimOrdered(t, 1))
	require.Empty(t, b.claimOrdered(t, 2), "a leased by the other center: still held")
	b.markSent(t, "a")
	require.Equal(t, []string{"b"}, b.claimOrdered(t, 2))
}

func (b *bundle) failSend(t *testing.T, key string, permanent, release bool) state.Outcome {
	t.Helper()
	res := b.applyOrdered(t, Event(biz, key, 0, state.Event{Kind: state.KindSendFailed, At: b.now(),
		RetryAt: b.now().Add(time.Minute), MaxAttempts: 5, Permanent: permanent, ReleaseOnDead: release, Err: "broker says no"}))
	return res.Outcomes[0].Outcome
}

// A DEAD head holds its key by default: the later ones wait until an
// operator retries it (it keeps its place) or closes it.
func testOrderDeadHolds(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.commitOrdered(t, "o-1", []string{"a", "b", "c"}, part0)
	require.True(t, b.failSend(t, "a", true, false).Dead)
	b.clock.Advance(time.Hour)
	require.Empty(t, b.claimOrdered(t), "a DEAD head holds the key")

	// Retry: the head is due again and keeps its place.
	res := b.applyOrdered(t, Operator(biz, "a", state.KindRetryNow, b.now(), "ops"))
	require.NoError(t, res.Outcomes[0].Err)
	require.Equal(t, []string{"a"}, sortedKeys(res.Sendable), "the retried head is handed out")
	require.Equal(t, int64(1), b.get(t, biz, "a").OrderSeq)
	b.markSent(t, "a")
	require.Equal(t, []string{"b"}, b.claimOrdered(t))
}

// Under the bizID's skip setting (ReleaseOnDead) a DEAD head releases the
// key: the next one goes.
func testOrderDeadReleases(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.commitOrdered(t, "o-1", []string{"a", "b"}, part0)
	res := b.applyOrdered(t, Event(biz, "a", 0, state.Event{Kind: state.KindSendFailed, At: b.now(),
		RetryAt: b.now().Add(time.Minute), MaxAttempts: 5, Permanent: true, ReleaseOnDead: true, Err: "broker says no"}))
	require.True(t, res.Outcomes[0].Dead)
	require.Equal(t, 1, res.Woken, "b woken after the commit, counted for the caller's scan")
	m := b.get(t, biz, "a")
	require.Equal(t, state.SendDead, m.SendStatus)
	require.Zero(t, m.OrderSeq, "released")
	require.Equal(t, []string{"b"}, b.claimOrdered(t))
}

// A head that failed and waits for its retry holds the key: the later one
// is not sent meanwhile, though it is due.
func testOrderRetries(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.commitOrdered(t, "o-1", []string{"a", "b"}, part0)
	require.Equal(t, state.Changed, b.failSend(t, "a", false, true).Effect)
	require.Empty(t, b.claimOrdered(t), "a waits for its backoff, b for a")
	b.clock.Advance(time.Minute)
	require.Equal(t, []string{"a"}, b.claimOrdered(t), "a is due again, b still waits")
	b.markSent(t, "a")
	require.Equal(t, []string{"b"}, b.claimOrdered(t))
}

// With per-key order on, Apply's inline send (ApplyRequest.Forward) is
// offered no message with an order sequence: the send would happen before
// the transaction commits, and a transaction that fails after it gives the
// sequence back, so a later message of the key could be numbered first and
// follow a send already made. Sequenced messages are written leased and
// go out once their sequence is durable, in key order; messages without an
// order key keep the inline send.
func testOrderInline(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	var mu sync.Mutex
	var offered []string
	send := func(_ context.Context, msgs []state.Message) []store.Forwarded {
		mu.Lock()
		defer mu.Unlock()
		out := make([]store.Forwarded, len(msgs))
		for i, m := range msgs {
			offered = append(offered, m.Key)
			out[i] = store.Forwarded{Sent: true, Ref: "r"}
		}
		return out
	}
	apply := func(changes ...store.Change) store.ApplyResult {
		res, err := b.s.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: lease, Forward: send, Ordered: true})
		require.NoError(t, err)
		return res
	}
	apply(PrepareOrdered(biz, "a", "o-1", 0, b.now()), PrepareOrdered(biz, "b", "o-1", 1, b.now()),
		PrepareOrdered(biz, "x", "o-2", 2, b.now()), Prepare(biz, "plain", 3, b.now()))
	res := apply(Commit(biz, "a", 0, b.now()), Commit(biz, "b", 1, b.now()), Commit(biz, "x", 2, b.now()), Commit(biz, "plain", 3, b.now()))
	require.Equal(t, []string{"plain"}, offered, "only the message without an order key is sent inline")
	require.Equal(t, []string{"plain"}, sortedKeys(res.Forwarded))
	require.Equal(t, []string{"a", "x"}, sortedKeys(res.Sendable), "the heads of o-1 and o-2 are handed over leased; b waits behind a")
	b.markSent(t, "a")
	b.markSent(t, "x")
	require.Equal(t, []string{"b"}, b.claimOrdered(t), "then b, and only b")

	// With order off, sequenced messages keep the inline send.
	offered = nil
	apply(PrepareOrdered(biz, "c", "o-3", 4, b.now()))
	res, err := b.s.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{Commit(biz, "c", 4, b.now())}, SendLease: lease, Forward: send})
	require.NoError(t, err)
	require.Equal(t, []string{"c"}, offered)
	require.Equal(t, []string{"c"}, sortedKeys(res.Forwarded))
}

// Operators free a blocked key: closing the head (it is never sent), or
// releasing it (it is sent without order); both are audited.
func testOrderOperator(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.commitOrdered(t, "o-1", []string{"a", "b", "c"}, part0)
	require.True(t, b.failSend(t, "a", true, false).Dead)
	res := b.applyOrdered(t, Operator(biz, "a", state.KindCloseHead, b.now(), "ops"))
	require.Equal(t, changed, res.Outcomes[0].Outcome)
	require.Equal(t, []string{"b"}, b.claimOrdered(t), "a closed: b goes")
	ma := b.get(t, biz, "a")
	require.Equal(t, state.SendDead, ma.SendStatus)
	require.Zero(t, ma.OrderSeq)
	audit, err := b.s.Audit(t.Context(), biz, "a")
	require.NoError(t, err)
	require.Equal(t, "close_head", audit[len(audit)-1].Action)

	// b is leased and fails; release it: c goes, and b is retried without
	// order.
	require.Equal(t, state.Changed, b.failSend(t, "b", false, false).Effect)
	require.Empty(t, b.claimOrdered(t))
	b.applyOrdered(t, Operator(biz, "b", state.KindReleaseOrder, b.now(), "ops"))
	require.Equal(t, []string{"c"}, b.claimOrdered(t), "b released: c goes")
	b.markSent(t, "c")
	b.clock.Advance(time.Minute)
	require.Equal(t, []string{"b"}, b.claimOrdered(t), "released b is still sent, without order")

	// A released message retried later is sequenced again, after the
	// key's last message.
	res = b.applyOrdered(t, Operator(biz, "a", state.KindRetryNow, b.now(), "ops"))
	require.NoError(t, res.Outcomes[0].Err)
	require.Equal(t, int64(4), b.get(t, biz, "a").OrderSeq)
	require.Equal(t, []string{"a"}, sortedKeys(res.Sendable), "nothing holds the key before it")
}

// The queue is bizID, order key, target and topic: a blocked key holds
// only its own queue.
func testOrderQueues(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.commitOrdered(t, "o-1", []string{"a"}, part0)
	res := b.commitOrdered(t, "o-2", []string{"x"}, part0)
	require.Equal(t, []string{"x"}, sortedKeys(res[0].Sendable), "another key")
	other := PrepareOrdered("other", "y", "o-1", 0, b.now())
	b.applyOrdered(t, other)
	res = []store.ApplyResult{b.applyOrdered(t, Commit("other", "y", 0, b.now()))}
	require.Equal(t, []string{"y"}, sortedKeys(res[0].Sendable), "another bizID")
	topic := PrepareOrdered(biz, "z", "o-1", 0, b.now())
	topic.Event.Body.Topic = "payments"
	b.applyOrdered(t, topic)
	res = []store.ApplyResult{b.applyOrdered(t, Commit(biz, "z", 0, b.now()))}
	require.Equal(t, []string{"z"}, sortedKeys(res[0].Sendable), "another topic")
	require.Equal(t, int64(1), b.get(t, biz, "z").OrderSeq, "its own counter")
}

// testBlockedKeys: the operator's view lists a key whose head is DEAD or
// failing, with its head and how many wait behind it, oldest first; not a
// key whose head simply waits for its first send.
func testBlockedKeys(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	o, ok := b.s.(store.Orderer)
	require.True(t, ok, "the store keeps per-key order: it lists blocked keys")
	b.commitOrdered(t, "o-1", []string{"a", "b", "c"}, part0)
	b.clock.Advance(time.Second)
	b.commitOrdered(t, "o-2", []string{"x", "y"}, part0)
	b.commitOrdered(t, "o-3", []string{"fresh", "behind"}, part0)
	got, err := o.BlockedKeys(t.Context(), "", 10)
	require.NoError(t, err)
	require.Empty(t, got, "no head failed yet")

	b.failSend(t, "x", false, false)
	b.failSend(t, "a", true, false)
	got, err = o.BlockedKeys(t.Context(), "", 10)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "a", got[0].Head.Key, "oldest commit first")
	require.Equal(t, "o-1", got[0].OrderKey)
	require.Equal(t, state.SendDead, got[0].Head.SendStatus)
	require.Equal(t, "broker says no", got[0].Head.LastError)
	require.EqualValues(t, 2, got[0].Waiting)
	require.Equal(t, "x", got[1].Head.Key)
	require.EqualValues(t, 1, got[1].Waiting)
	require.Nil(t, got[0].Head.Payload, "a summary")

	got, err = o.BlockedKeys(t.Context(), "other", 10)
	require.NoError(t, err)
	require.Empty(t, got)
	got, err = o.BlockedKeys(t.Context(), biz, 1)
	require.NoError(t, err)
	require.Len(t, got, 1)

	b.applyOrdered(t, Operator(biz, "a", state.KindCloseHead, b.now(), "ops"))
	got, err = o.BlockedKeys(t.Context(), "", 10)
	require.NoError(t, err)
	require.Len(t, got, 1, "a closed: b is o-1's head and has not failed")
	require.Equal(t, "x", got[0].Head.Key)
}

// commitRun prepares and commits keys of order key ok in order, one batch
// each, all with forward key fk on partition part(i).
func (b *bundle) commitRun(t *testing.T, ok, fk string, keys []string, part func(int) int32) {
	t.Helper()
	for i, k := range keys {
		c := PrepareOrdered(biz, k, ok, part(i), b.now())
		c.Event.Body.ForwardKey = fk
		b.applyOrdered(t, c)
		b.applyOrdered(t, Commit(biz, k, part(i), b.now()))
	}
}

// claimRun claims with runs of up to run messages (store.Claim.Run) and
// returns the keys in the order the claim returned them; every message of
// one queue carries its head's lease.
func (b *bundle) claimRun(t *testing.T, run, limit int) []string {
	t.Helper()
	got, err := b.s.ClaimSends(t.Context(), store.Claim{Partitions: allParts, Limit: limit, Lease: lease, Ordered: true, Run: run})
	require.NoError(t, err)
	return b.checkRuns(t, got)
}

// checkRuns checks that each queue's messages in got follow one another
// in sequence order without a gap, leased as their head is and as
// stored, and returns their keys in got's order.
func (b *bundle) checkRuns(t *testing.T, got []state.Message) []string {
	t.Helper()
	keys := []string{}
	last := map[store.OrderRef]state.Message{}
	for _, m := range got {
		keys = append(keys, m.Key)
		require.NotZero(t, m.LeaseToken, m.Key)
		require.Equal(t, b.now().Add(lease), m.SendNextAt, m.Key)
		stored := b.get(t, biz, m.Key)
		require.Equal(t, m.LeaseToken, stored.LeaseToken, "%s leased as returned", m.Key)
		require.Equal(t, m.SendNextAt, stored.SendNextAt, "%s leased as returned", m.Key)
		if p, ok := last[store.OrderOf(&m)]; ok && m.OrderSeq > 0 {
			require.Equal(t, p.OrderSeq+1, m.OrderSeq, "%s right after %s", m.Key, p.Key)
			require.Equal(t, p.LeaseToken, m.LeaseToken, "%s leased with %s", m.Key, p.Key)
		}
		last[store.OrderOf(&m)] = m
	}
	return keys
}

// store.Claim.Run: behind each head the claim leases the next messages of
// its key, in sequence order and with the head's lease, up to Run in all,
// within Limit; a run ends before a message that failed (its backoff), is
// DEAD or is on another partition (not before one with another forward
// key); the rest of the key stays held.
func testOrderClaimRun(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.commitRun(t, "o-1", "cart", []string{"a", "b", "c", "d", "e", "f"}, part0)
	b.clock.Advance(lease + time.Second) // a's handed-over lease ran out
	require.Equal(t, []string{"a", "b"}, b.claimRun(t, 4, 2), "the run counts against Limit")
	require.Empty(t, b.claimRun(t, 4, 100), "c to f held behind a and b, leased")
	b.clock.Advance(lease + time.Second)
	require.Equal(t, []string{"a", "b", "c", "d"}, b.claimRun(t, 4, 100), "a run of four in sequence order")
	require.Empty(t, b.claimRun(t, 4, 100), "e and f held behind the run")
	b.markSent(t, "a", "b", "c", "d")
	require.Equal(t, []string{"e", "f"}, b.claimRun(t, 4, 100), "the run sent: the next one")
	b.markSent(t, "e", "f")

	// Where a run ends.
	b.commitRun(t, "o-2", "cart", []string{"g", "h", "i"}, part0)
	b.failSend(t, "h", false, false) // waits for its backoff
	b.commitRun(t, "o-3", "cart", []string{"j", "k", "l"}, part0)
	b.failSend(t, "k", true, false) // DEAD
	b.commitRun(t, "o-4", "cart", []string{"m", "n"}, part0)
	c := PrepareOrdered(biz, "o", "o-4", 0, b.now()) // another forward key
	b.applyOrdered(t, c)
	b.applyOrdered(t, Commit(biz, "o", 0, b.now()))
	b.commitRun(t, "o-4", "cart", []string{"p"}, part0)
	b.commitRun(t, "o-5", "cart", []string{"q", "r", "s"}, func(i int) int32 { return []int32{0, 0, 1}[i] })
	b.clock.Advance(lease + time.Second) // the heads' leases ran out, not h's backoff (a minute)
	got, err := b.s.ClaimSends(t.Context(), store.Claim{Partitions: allParts, Limit: 100, Lease: lease, Ordered: true, Run: 10})
	require.NoError(t, err)
	b.checkRuns(t, got)
	runs := map[string][]string{}
	for _, m := range got {
		runs[m.OrderKey] = append(runs[m.OrderKey], m.Key)
	}
	require.Equal(t, map[string][]string{"o-2": {"g"}, "o-3": {"j"}, "o-4": {"m", "n", "o", "p"}, "o-5": {"q", "r"}}, runs)
}

// store.NextClaimer with Claim.Run: the sent marks of a run lease the next
// run of its key with the next head, in sequence order, within Limit.
func testOrderClaimNextRun(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	nc, ok := b.s.(store.NextClaimer)
	if !ok {
		t.Skip("the store does not implement store.NextClaimer")
	}
	b.commitRun(t, "o-1", "cart", []string{"a", "b", "c", "d", "e", "f", "g"}, part0)
	mark := func(limit int, keys ...string) []string {
		t.Helper()
		var sent []store.Sent
		for _, k := range keys {
			sent = append(sent, store.Sent{ID: b.get(t, biz, k).ID, Ref: "ref/" + k, Ordered: true})
		}
		got, _, err := nc.MarkSentClaimNext(t.Context(), sent, store.Claim{Partitions: allParts, Limit: limit, Lease: lease, Run: 3})
		require.NoError(t, err)
		return b.checkRuns(t, got)
	}
	require.Equal(t, []string{"b", "c", "d"}, mark(10, "a"), "a's mark leases b and its run")
	require.Equal(t, []string{"e", "f"}, mark(2, "b", "c", "d"), "within Limit")
	require.Equal(t, []string{"g"}, mark(10, "e", "f"))
}
