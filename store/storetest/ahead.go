package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// ExerciseAhead runs the suite of writing ordered messages ahead
// (store.ApplyRequest.WriteAhead, docs/ordering.md) against a store that keeps
// sent watermarks (PostgreSQL): one write per message, the send after the
// commit, the confirmation by the watermark, and what holds a key until
// then.
func ExerciseAhead(t *testing.T, newStore NewStore) {
	t.Helper()
	t.Run("WrittenOnceSentAfterCommit", func(t *testing.T) { t.Parallel(); testAheadWritesOnce(t, newStore) })
	t.Run("FailedSendWrittenBack", func(t *testing.T) { t.Parallel(); testAheadSendFails(t, newStore) })
	t.Run("InOrderOneSendPerBatch", func(t *testing.T) { t.Parallel(); testAheadInOrder(t, newStore) })
	t.Run("UnconfirmedHoldsUntilReplay", func(t *testing.T) { t.Parallel(); testAheadUnconfirmed(t, newStore) })
	t.Run("OffKeepsThePathOfLevel2", func(t *testing.T) { t.Parallel(); testAheadOff(t, newStore) })
}

// fromRecord is c as ingest makes it: from the control record at offset.
func fromRecord(c store.Change, offset int64) store.Change {
	c.Offset, c.HasOffset = offset, true
	return c
}

// sender is a SendAhead that records what it is asked to send, and
// answers sent unless fail names the message.
type sender struct {
	calls [][]string
	fail  map[string]bool
	// during, when set, runs before the answers (inside the send).
	during func(ms []state.Message)
}

func (s *sender) send(_ context.Context, ms []state.Message) []store.Forwarded {
	var keys []string
	out := make([]store.Forwarded, len(ms))
	for i, m := range ms {
		keys = append(keys, m.Key)
		out[i] = store.Forwarded{Sent: !s.fail[m.Key], Ref: "ref/" + m.Key}
	}
	s.calls = append(s.calls, keys)
	if s.during != nil {
		s.during(ms)
	}
	return out
}

func (b *bundle) applyAhead(ctx context.Context, s *sender, changes ...store.Change) (store.ApplyResult, error) {
	return b.s.Apply(ctx, store.ApplyRequest{Changes: changes, SendLease: lease, Ordered: true, WriteAhead: true, SendAhead: s.send})
}

// An ordered message committed by a control record is written SENT, with
// that record, in the transaction that sequences it (committed before the
// send: another connection reads it sent during the send), sent once,
// and confirmed; the key's next message on the same partition goes the
// same way, its predecessor's record remembered. An unordered message of
// the batch keeps the regular path.
func testAheadWritesOnce(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	s := &sender{}
	s.during = func(ms []state.Message) {
		for _, m := range ms {
			got := b.get(t, biz, m.Key)
			require.Equal(t, state.SendSent, got.SendStatus, "committed sent before the send")
			require.True(t, got.SentAhead.Valid)
		}
	}
	res, err := b.applyAhead(t.Context(), s,
		fromRecord(PrepareOrdered(biz, "a", "o-1", 0, b.now()), 10), fromRecord(Commit(biz, "a", 0, b.now()), 11),
		fromRecord(Prepare(biz, "plain", 0, b.now()), 12), fromRecord(Commit(biz, "plain", 0, b.now()), 13))
	require.NoError(t, err)
	require.Equal(t, [][]string{{"a"}}, s.calls)
	require.Equal(t, 1, res.Ahead)
	require.Equal(t, []string{"a"}, sortedKeys(res.Forwarded))
	require.Equal(t, "ref/a", res.Forwarded[0].SendRef)
	require.Equal(t, []string{"plain"}, sortedKeys(res.Sendable), "an unordered message is leased as before")
	a := b.get(t, biz, "a")
	require.Equal(t, state.SendSent, a.SendStatus)
	require.Equal(t, state.ControlPos{Partition: 0, Offset: 11, Valid: true}, a.SentAhead)
	require.Equal(t, int64(1), a.OrderSeq)
	require.False(t, a.OrderPred.Valid, "the key's first message has no predecessor")

	res, err = b.applyAhead(t.Context(), s, fromRecord(PrepareOrdered(biz, "b", "o-1", 0, b.now()), 14), fromRecord(Commit(biz, "b", 0, b.now()), 15))
	require.NoError(t, err)
	require.Equal(t, 1, res.Ahead, "its predecessor is confirmed")
	m := b.get(t, biz, "b")
	require.Equal(t, int64(2), m.OrderSeq)
	require.Equal(t, state.ControlPos{Partition: 0, Offset: 11, Valid: true}, m.OrderPred)
	require.Equal(t, state.SendSent, m.SendStatus)

	// On another partition, committed by a record too: its predecessor
	// is confirmed, so it goes ahead as well.
	res, err = b.applyAhead(t.Context(), s, fromRecord(PrepareOrdered(biz, "c", "o-1", 2, b.now()), 3), fromRecord(Commit(biz, "c", 2, b.now()), 4))
	require.NoError(t, err)
	require.Equal(t, 1, res.Ahead)
	require.Equal(t, state.ControlPos{Partition: 0, Offset: 15, Valid: true}, b.get(t, biz, "c").OrderPred)
	require.Equal(t, [][]string{{"a"}, {"b"}, {"c"}}, s.calls)

	// Two messages of a key in one batch go ahead in turn: the second is
	// offered once the first was sent.
	res, err = b.applyAhead(t.Context(), s,
		fromRecord(PrepareOrdered(biz, "d", "o-2", 0, b.now()), 20), fromRecord(Commit(biz, "d", 0, b.now()), 21),
		fromRecord(PrepareOrdered(biz, "e", "o-2", 0, b.now()), 22), fromRecord(Commit(biz, "e", 0, b.now()), 23))
	require.NoError(t, err)
	require.Equal(t, 2, res.Ahead)
	require.Equal(t, [][]string{{"d"}, {"e"}}, s.calls[len(s.calls)-2:])
	require.Equal(t, state.ControlPos{Partition: 0, Offset: 21, Valid: true}, b.get(t, biz, "e").OrderPred)
}

// A message written ahead whose send fails is written back to pending,
// leased for the regular path, and holds its key: the next message is
// parked until it is sent.
func testAheadSendFails(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	s := &sender{fail: map[string]bool{"a": true}}
	res, err := b.applyAhead(t.Context(), s, fromRecord(PrepareOrdered(biz, "a", "o-1", 0, b.now()), 0), fromRecord(Commit(biz, "a", 0, b.now()), 1))
	require.NoError(t, err)
	require.Zero(t, res.Ahead)
	require.Empty(t, res.Forwarded)
	require.Equal(t, []string{"a"}, sortedKeys(res.Sendable), "written back, leased, handed over")
	a := b.get(t, biz, "a")
	require.Equal(t, state.SendPending, a.SendStatus)
	require.False(t, a.SentAhead.Valid)
	require.Equal(t, res.Sendable[0].LeaseToken, a.LeaseToken)
	require.Equal(t, b.now().Add(lease), a.SendNextAt)

	res, err = b.applyAhead(t.Context(), s, fromRecord(PrepareOrdered(biz, "b", "o-1", 0, b.now()), 2), fromRecord(Commit(biz, "b", 0, b.now()), 3))
	require.NoError(t, err)
	require.Zero(t, res.Ahead)
	require.Empty(t, res.Sendable, "held by a")
	require.Equal(t, [][]string{{"a"}}, s.calls, "b was never offered")
	require.Equal(t, state.SendPending, b.get(t, biz, "b").SendStatus)
	b.clock.Advance(lease + time.Second)
	require.Equal(t, []string{"a"}, b.claimOrdered(t), "the claim takes the head only")
	b.markSent(t, "a")
	b.clock.Advance(lease + time.Second)
	require.Equal(t, []string{"b"}, b.claimOrdered(t))

	// In one batch, the second of three fails: the first is sent, the
	// second written back and leased, the third never offered and parked
	// behind it until its sent mark.
	s2 := &sender{fail: map[string]bool{"g": true}}
	var changes []store.Change
	for i, k := range []string{"f", "g", "h"} {
		changes = append(changes, fromRecord(PrepareOrdered(biz, k, "o-3", 1, b.now()), int64(2*i)),
			fromRecord(Commit(biz, k, 1, b.now()), int64(2*i+1)))
	}
	res, err = b.applyAhead(t.Context(), s2, changes...)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"f"}, {"g"}}, s2.calls)
	require.Equal(t, 1, res.Ahead)
	require.Equal(t, []string{"g"}, sortedKeys(res.Sendable))
	require.Equal(t, state.SendSent, b.get(t, biz, "f").SendStatus)
	h := b.get(t, biz, "h")
	require.Equal(t, state.SendPending, h.SendStatus)
	require.False(t, h.SentAhead.Valid)
	require.Zero(t, h.LeaseToken, "parked, not leased")
	require.Empty(t, b.claimOrdered(t), "g is leased, h held behind it")
	b.markSent(t, "g")
	require.Equal(t, []string{"h"}, b.claimOrdered(t), "woken by g's sent mark")
}

// With AheadInOrder the batch's messages written ahead go in one send,
// each key's in sequence. The second of a key's three fails: the first is
// sent, the second written back and leased, and the third, which the
// sender left unsent behind it, is parked behind it (not leased, not
// handed over) and woken by its sent mark; another key's two are sent.
func testAheadInOrder(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	s := &sender{fail: map[string]bool{"g": true, "h": true}} // h: not sent behind g
	var changes []store.Change
	for i, k := range []string{"f", "x", "g", "y", "h"} {
		ok := "o-3"
		if k == "x" || k == "y" {
			ok = "o-4"
		}
		changes = append(changes, fromRecord(PrepareOrdered(biz, k, ok, 1, b.now()), int64(2*i)),
			fromRecord(Commit(biz, k, 1, b.now()), int64(2*i+1)))
	}
	res, err := b.s.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: lease, Ordered: true,
		WriteAhead: true, SendAhead: s.send, AheadInOrder: true})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"f", "g", "h", "x", "y"}}, s.calls, "one send, each key's messages in sequence")
	require.Equal(t, 3, res.Ahead)
	require.Equal(t, []string{"f", "x", "y"}, sortedKeys(res.Forwarded))
	require.Equal(t, []string{"g"}, sortedKeys(res.Sendable), "the first not sent is leased; the one behind it is not")
	h := b.get(t, biz, "h")
	require.Equal(t, state.SendPending, h.SendStatus)
	require.False(t, h.SentAhead.Valid)
	require.Zero(t, h.LeaseToken, "parked, not leased")
	require.Zero(t, h.SendAttempts)
	require.Empty(t, b.claimOrdered(t), "g is leased, h held behind it")
	b.markSent(t, "g")
	require.Equal(t, []string{"h"}, b.claimOrdered(t), "woken by g's sent mark")
}

// A message written ahead whose confirmation never came (the center died
// after the commit) holds its key: the next message, on another
// partition, is parked and no claim takes it, whatever its due time. The
// replay of its records writes it back to pending and raises the
// watermark; once it is sent, the next one goes.
func testAheadUnconfirmed(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	ctx, cancel := context.WithCancel(t.Context())
	s := &sender{during: func([]state.Message) { cancel() }} // dies during the send
	batch := []store.Change{fromRecord(PrepareOrdered(biz, "a", "o-1", 0, b.now()), 5), fromRecord(Commit(biz, "a", 0, b.now()), 6)}
	_, err := b.applyAhead(ctx, s, batch...)
	require.Error(t, err, "the confirmation fails")
	a := b.get(t, biz, "a")
	require.Equal(t, state.SendSent, a.SendStatus, "committed ahead")
	require.True(t, a.SentAhead.Valid)

	ok := &sender{}
	res, err := b.applyAhead(t.Context(), ok, fromRecord(PrepareOrdered(biz, "b", "o-1", 1, b.now()), 0), fromRecord(Commit(biz, "b", 1, b.now()), 1))
	require.NoError(t, err)
	require.Zero(t, res.Ahead)
	require.Empty(t, res.Sendable, "its predecessor's send is not confirmed")
	require.Empty(t, ok.calls)
	require.Equal(t, state.ControlPos{Partition: 0, Offset: 6, Valid: true}, b.get(t, biz, "b").OrderPred)
	// A check-back commit (no record) is held the same way.
	b.apply(t, PrepareOrdered(biz, "c", "o-1", 1, b.now()))
	res, err = b.s.Apply(t.Context(), store.ApplyRequest{SendLease: lease, Ordered: true, WriteAhead: true, SendAhead: ok.send,
		Changes: []store.Change{Event(biz, "c", 1, state.Event{Kind: state.KindCheckCommit, At: b.now()})}})
	require.NoError(t, err)
	require.Empty(t, res.Sendable)
	b.clock.Advance(10 * lease)
	require.Empty(t, b.claimOrdered(t), "nothing goes before a is confirmed")

	// The replay (the partition's next owner reads the records again).
	res, err = b.applyAhead(t.Context(), ok, batch...)
	require.NoError(t, err)
	require.Equal(t, 1, res.Unconfirmed)
	require.Equal(t, []string{"a"}, sortedKeys(res.Sendable), "written back and leased")
	require.Empty(t, ok.calls, "sent by the regular path, not ahead")
	a = b.get(t, biz, "a")
	require.Equal(t, state.SendPending, a.SendStatus)
	require.False(t, a.SentAhead.Valid)
	require.Contains(t, a.LastError, "not confirmed")
	b.clock.Advance(lease + time.Second)
	require.Equal(t, []string{"a"}, b.claimOrdered(t), "a first")
	b.markSent(t, "a")
	b.clock.Advance(lease + time.Second)
	require.Equal(t, []string{"b"}, b.claimOrdered(t))

	// A second replay finds nothing to write back.
	res, err = b.applyAhead(t.Context(), ok, batch...)
	require.NoError(t, err)
	require.Zero(t, res.Unconfirmed)
}

// Without WriteAhead (the cluster level below 4) an ordered message takes
// the path of level 2, and its key's counter names no control record: a
// later message is not held by a watermark.
func testAheadOff(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	res, err := b.s.Apply(t.Context(), store.ApplyRequest{SendLease: lease, Ordered: true, SendAhead: (&sender{}).send,
		Changes: []store.Change{fromRecord(PrepareOrdered(biz, "a", "o-1", 0, b.now()), 0), fromRecord(Commit(biz, "a", 0, b.now()), 1)}})
	require.NoError(t, err)
	require.Zero(t, res.Ahead)
	require.Equal(t, []string{"a"}, sortedKeys(res.Sendable))
	require.False(t, b.get(t, biz, "a").SentAhead.Valid)
	b.markSent(t, "a")
	res, err = b.applyAhead(t.Context(), &sender{}, fromRecord(PrepareOrdered(biz, "b", "o-1", 1, b.now()), 0), fromRecord(Commit(biz, "b", 1, b.now()), 1))
	require.NoError(t, err)
	require.Equal(t, 1, res.Ahead)
	require.False(t, b.get(t, biz, "b").OrderPred.Valid)
}
