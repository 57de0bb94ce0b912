package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/stretchr/testify/require"
)

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
