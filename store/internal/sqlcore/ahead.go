package sqlcore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
)

// AheadTx is a Tx of a store that writes ordered messages ahead
// (store.ApplyRequest.WriteAhead) and keeps a sent watermark per control
// partition: PostgreSQL. Its ordering step records where each queue's
// messages were sequenced, so that a message waits until its
// predecessor's send is confirmed (state.Message.OrderPred).
type AheadTx interface {
	// LoadAhead is Load, and reads the sent watermark of every control
	// partition that has one in the same round trip.
	LoadAhead(ctx context.Context, refs []store.MessageRef) (map[store.MessageRef]*state.Message, map[int32]int64, error)
	// AssignSeqsAhead numbers need (AssignSeqs) and reads the holders of
	// refs (Holders, leaving out exclude) as SeqHoldersTx does. It also
	// records in each queue's counter the control record of the queue's
	// last message in need (last; none when absent) and returns the one
	// recorded before: the predecessor of the queue's first message in
	// need (absent: none, or not sequenced by a control record that could
	// write ahead).
	AssignSeqsAhead(ctx context.Context, need []*state.Message, last map[store.OrderRef]state.ControlPos,
		refs []store.OrderRef, exclude []int64) (low map[store.OrderRef]int64, prev map[store.OrderRef]state.ControlPos, err error)
}

// AheadDriver is a Driver whose transactions are AheadTx.
type AheadDriver interface {
	// Confirm runs after a batch that wrote ahead committed, in a
	// transaction of its own: it writes back the messages of back (as set
	// on them: pending, leased or due) if they are still sent ahead, and
	// raises the sent watermark of each partition of marks to its offset
	// (never lowers it). Then it wakes the next messages of the queues of
	// the ids of sent, as Tx.Wake does, and returns how many it woke.
	Confirm(ctx context.Context, back []*state.Message, marks map[int32]int64, sent []int64, now time.Time) (int, error)
}

// ahead is one Apply try's part in writing ahead.
type ahead struct {
	tx AheadTx
	// wm is the sent watermark per control partition, read with the rows.
	wm map[int32]int64
	// write: the batch writes ahead (ApplyRequest.WriteAhead with Ordered
	// and SendAhead).
	write bool
	// recovered are the rows written ahead by an earlier try whose send
	// was never confirmed, written back to pending by this one.
	recovered map[store.MessageRef]bool
	// positioned: a counter now names one of the batch's control records,
	// which the batch's confirmation must pass.
	positioned bool
}

// confirms tells whether the batch must be confirmed after its commit.
func (a *ahead) confirms(f *store.Folded) bool {
	return len(f.Ahead) > 0 || len(a.recovered) > 0 || a.positioned
}

// confirmed tells whether the control record at p is at or below its
// partition's sent watermark.
func (a *ahead) confirmed(p state.ControlPos) bool {
	w, ok := a.wm[p.Partition]
	return ok && p.Offset <= w
}

// unconfirmed tells whether m was written ahead and its send is not
// confirmed by its partition's watermark.
func (a *ahead) unconfirmed(m *state.Message) bool {
	return m.SentAhead.Valid && !a.confirmed(m.SentAhead)
}

// anyUnconfirmed tells whether a row of the batch is unconfirmed.
func (a *ahead) anyUnconfirmed(loaded map[store.MessageRef]*state.Message) bool {
	for _, m := range loaded {
		if a.unconfirmed(m) {
			return true
		}
	}
	return false
}

// recover writes back to pending the rows of the batch that were written
// ahead and whose send was never confirmed: the center that wrote them
// died (or its confirmation failed) between their commit and their
// partition's watermark, and this batch is the replay of their control
// records. They are sent again by the regular path (at least once), and
// hold their keys until then.
func (a *ahead) recover(loaded map[store.MessageRef]*state.Message, f *store.Folded, now time.Time) {
	if !a.anyUnconfirmed(loaded) {
		return // the common case: nothing to write back, no index of the batch
	}
	byRef := map[store.MessageRef]*state.Message{}
	for _, rows := range [][]*state.Message{f.Inserts, f.Updates} {
		for _, m := range rows {
			byRef[store.MessageRef{BizID: m.BizID, Key: m.Key}] = m
		}
	}
	for r, old := range loaded {
		if !a.unconfirmed(old) {
			continue
		}
		m := byRef[r]
		if m == nil {
			cp := *old
			m = &cp
			f.Updates = append(f.Updates, m)
		}
		if m.SendStatus != state.SendSent || !m.SentAhead.Valid {
			continue
		}
		m.SendStatus, m.SentAt, m.SendRef, m.SendNextAt = state.SendPending, time.Time{}, "", now
		m.SentAhead = state.ControlPos{}
		m.LastError = "written ahead and its send not confirmed (the center stopped before its partition's watermark); sent again"
		if a.recovered == nil {
			a.recovered = map[store.MessageRef]bool{}
		}
		a.recovered[r] = true
		if m.Sendable() {
			f.Sendable = append(f.Sendable, m)
		}
	}
}

// predecessors sets the OrderPred of the messages numbered now (the
// counter's previous record for a queue's first one, the record of the
// one before it in the batch for the others) and parks, through low, each
// sequenced sendable message whose predecessor's control record is above
// its partition's watermark: that one was written ahead and its send is
// not confirmed yet.
func (a *ahead) predecessors(f *store.Folded, numbered map[*state.Message]bool, prev map[store.OrderRef]state.ControlPos, low map[store.OrderRef]int64) {
	last := map[store.OrderRef]state.ControlPos{}
	seen := map[store.OrderRef]bool{}
	inBatch := map[state.ControlPos]bool{}
	for _, m := range f.Sendable {
		if numbered[m] {
			r := store.OrderOf(m)
			if !seen[r] {
				seen[r] = true
				m.OrderPred = prev[r]
			} else {
				m.OrderPred = last[r]
			}
			last[r] = a.position(f, m)
		}
		if p := a.position(f, m); p.Valid {
			inBatch[p] = true
		}
	}
	for _, m := range f.Sendable {
		if m.OrderSeq == 0 || !m.OrderPred.Valid || a.confirmed(m.OrderPred) || inBatch[m.OrderPred] {
			continue
		}
		r := store.OrderOf(m)
		if l, ok := low[r]; !ok || m.OrderSeq-1 < l {
			low[r] = m.OrderSeq - 1
		}
	}
}

// position is the control record that made m sendable in this batch, when
// the batch writes ahead (none otherwise: no watermark will pass it).
func (a *ahead) position(f *store.Folded, m *state.Message) state.ControlPos {
	if !a.write {
		return state.ControlPos{}
	}
	return f.Positions[m]
}

// lastPositions returns the control record of each queue's last message
// of need, for its counter.
func (a *ahead) lastPositions(f *store.Folded, need []*state.Message) map[store.OrderRef]state.ControlPos {
	if !a.write {
		return nil
	}
	last := map[store.OrderRef]state.ControlPos{}
	for _, m := range need {
		p := a.position(f, m)
		last[store.OrderOf(m)] = p
		a.positioned = a.positioned || p.Valid
	}
	return last
}

// eligible tells whether m, sendable, would be written ahead: the batch
// writes ahead, and m is sequenced and made sendable by a control record
// on its own partition (the others, and those written back by recover,
// stay on the regular path).
func (a *ahead) eligible(f *store.Folded, m *state.Message) bool {
	if !a.write || m.OrderSeq == 0 {
		return false
	}
	p := f.Positions[m]
	return p.Valid && p.Partition == m.Partition && !a.recovered[store.MessageRef{BizID: m.BizID, Key: m.Key}]
}

// writeAhead moves from f.Sendable to f.Ahead the messages eligible to be
// written ahead, written sent at now: their sequence and their sent state
// are one write, committed before the send.
func (a *ahead) writeAhead(f *store.Folded, now time.Time) {
	if !a.write {
		return
	}
	keep := f.Sendable[:0]
	for _, m := range f.Sendable {
		p := f.Positions[m]
		if !a.eligible(f, m) {
			keep = append(keep, m)
			continue
		}
		next, out, err := state.Apply(*m, state.Event{Kind: state.KindSent, At: now})
		if err != nil || out.Effect != state.Changed {
			keep = append(keep, m)
			continue
		}
		store.ClearStaleError(&next, state.KindSent, out)
		next.LeaseToken = 0
		next.SentAhead = p
		*m = next
		f.Ahead = append(f.Ahead, m)
	}
	clear(f.Sendable[len(keep):])
	f.Sendable = keep
}

// marks returns the highest control offset of changes per partition:
// where the batch's confirmation raises the watermarks.
func marks(changes []store.Change) map[int32]int64 {
	out := map[int32]int64{}
	for _, c := range changes {
		if c.HasOffset {
			if o, ok := out[c.Partition]; !ok || c.Offset > o {
				out[c.Partition] = c.Offset
			}
		}
	}
	return out
}

// sendAhead sends the messages written ahead, after the commit, and
// confirms the batch (AheadDriver.Confirm). A queue's messages go in
// turn: its first ones in one call with every other queue's first, its
// second ones in the next call, and so on, each only if the one before it
// was sent; or, with req.AheadInOrder, all in one call, the sender
// keeping each queue's order. One not sent is written back to pending: leased for lease and
// returned in res.Sendable (or due now when the sender held it back), and
// the later ones of its queue, never offered, are parked behind it until
// the lease (its sent mark wakes them). The sent ones are added to
// res.Forwarded. The batch's partitions' watermarks are raised past it
// either way. The next messages of the queues the batch parked behind a
// message it sent (parked) are woken; a queue without one has no next
// message but one that another batch parked behind an unconfirmed
// predecessor, and that batch's own wake made it due for the claims,
// which take it once the watermark passed. An error leaves the batch
// unconfirmed: the caller replays it, and the replay writes back what was
// written ahead (recover).
func (c *Core) sendAhead(ctx context.Context, drv AheadDriver, req store.ApplyRequest, ahead []state.Message,
	parked map[store.OrderRef]bool, res *store.ApplyResult) error {
	now := codec.Time(c.now())
	queues := map[store.OrderRef][]int{}
	var order []store.OrderRef
	for i := range ahead {
		r := store.OrderOf(&ahead[i])
		if _, ok := queues[r]; !ok {
			order = append(order, r)
		}
		queues[r] = append(queues[r], i)
	}
	for _, r := range order {
		q := queues[r]
		slices.SortFunc(q, func(a, b int) int { return cmp.Compare(ahead[a].OrderSeq, ahead[b].OrderSeq) })
	}
	const (
		untried = iota
		sent
		failed
		held
	)
	outcome := make([]int, len(ahead))
	send := func(idx []int) {
		msgs := make([]state.Message, len(idx))
		for j, i := range idx {
			msgs[j] = ahead[i]
		}
		results := req.SendAhead(ctx, msgs)
		for j, i := range idx {
			switch {
			case j < len(results) && results[j].Sent:
				outcome[i] = sent
				ahead[i].SendRef = results[j].Ref
			case j < len(results) && results[j].Held:
				outcome[i] = held
			default:
				outcome[i] = failed
			}
		}
	}
	if req.AheadInOrder {
		// One call; the sender keeps each key's order. Behind a key's
		// first message not sent, the rest were not offered in order.
		var idx []int
		for _, r := range order {
			idx = append(idx, queues[r]...)
		}
		send(idx)
		for _, r := range order {
			stop := false
			for _, i := range queues[r] {
				switch {
				case outcome[i] == sent:
				case stop:
					outcome[i] = untried
				default:
					stop = true
				}
			}
		}
	}
	for round := 0; !req.AheadInOrder; round++ {
		var idx []int
		for _, r := range order {
			if q := queues[r]; round < len(q) && (round == 0 || outcome[q[round-1]] == sent) {
				idx = append(idx, q[round])
			}
		}
		if len(idx) == 0 {
			break
		}
		send(idx)
	}
	var back []*state.Message
	var wake []int64
	token := codec.LeaseToken()
	for i := range ahead {
		m := &ahead[i]
		if outcome[i] == sent {
			res.Forwarded = append(res.Forwarded, *m)
			res.Ahead++
			if parked[store.OrderOf(m)] {
				wake = append(wake, m.ID)
			}
			continue
		}
		m.SendStatus, m.SentAt, m.SendRef, m.SentAhead = state.SendPending, time.Time{}, "", state.ControlPos{}
		m.SendNextAt, m.LeaseToken = now, 0
		switch {
		case outcome[i] == failed && req.SendLease > 0:
			m.SendNextAt, m.LeaseToken = now.Add(req.SendLease), token
		case outcome[i] == untried && req.SendLease > 0:
			m.SendNextAt = now.Add(req.SendLease) // parked behind the one that failed
		}
		back = append(back, m)
	}
	woken, err := drv.Confirm(ctx, back, marks(req.Changes), wake, now)
	if err != nil {
		return fmt.Errorf("confirm the messages written ahead: %w", c.translateErr(err))
	}
	res.Woken += woken
	for _, m := range back {
		if m.LeaseToken != 0 {
			res.Sendable = append(res.Sendable, *m)
		}
	}
	return nil
}
