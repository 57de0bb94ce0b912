package store

import (
	"cmp"
	"slices"
	"time"

	"github.com/eventcenter/eventcenter/state"
)

// DropHeld removes from f.Sendable every sequenced message held back by an
// earlier-sequenced holder of its queue (state.Message.HoldsOrder): low
// has the lowest sequence of the holders the database has outside the
// batch, per queue; the batch's rows count in their new state. Dropped
// messages stay in Inserts or Updates, written unleased and parked: due at
// park (unless it is zero), or earlier when the key is freed and the store
// wakes them.
//
// It returns the queues of the messages it dropped.
func (f *Folded) DropHeld(low map[OrderRef]int64, park time.Time) map[OrderRef]bool {
	lowest := func(r OrderRef, seq int64) {
		if l, ok := low[r]; !ok || seq < l {
			low[r] = seq
		}
	}
	for _, rows := range [][]*state.Message{f.Inserts, f.Updates} {
		for _, m := range rows {
			if m.HoldsOrder() {
				lowest(OrderOf(m), m.OrderSeq)
			}
		}
	}
	var dropped map[OrderRef]bool
	keep := f.Sendable[:0]
	for _, m := range f.Sendable {
		if l, ok := low[OrderOf(m)]; m.OrderSeq > 0 && ok && l < m.OrderSeq {
			if !park.IsZero() {
				m.SendNextAt = park
			}
			m.LeaseToken = 0
			if dropped == nil {
				dropped = map[OrderRef]bool{}
			}
			dropped[OrderOf(m)] = true
			continue
		}
		keep = append(keep, m)
	}
	clear(f.Sendable[len(keep):])
	f.Sendable = keep
	return dropped
}

// DropHeldAhead is DropHeld for a batch that writes ahead
// (ApplyRequest.WriteAhead): a sendable message it keeps for which
// ahead is true does not hold back the later messages of its queue in the
// batch, which go ahead after it, each sent once the one before it was
// (a failed send holds back the rest); any other message that holds its
// key holds them back as in DropHeld.
//
// It returns the queues of the messages it dropped.
func (f *Folded) DropHeldAhead(low map[OrderRef]int64, park time.Time, ahead func(*state.Message) bool) map[OrderRef]bool {
	sendable := make(map[*state.Message]bool, len(f.Sendable))
	for _, m := range f.Sendable {
		sendable[m] = true
	}
	for _, rows := range [][]*state.Message{f.Inserts, f.Updates} {
		for _, m := range rows {
			if m.HoldsOrder() && !sendable[m] {
				if l, ok := low[OrderOf(m)]; !ok || m.OrderSeq < l {
					low[OrderOf(m)] = m.OrderSeq
				}
			}
		}
	}
	bySeq := slices.Clone(f.Sendable)
	slices.SortStableFunc(bySeq, func(a, b *state.Message) int { return cmp.Compare(a.OrderSeq, b.OrderSeq) })
	blocked := map[OrderRef]bool{}
	drop := map[*state.Message]bool{}
	var dropped map[OrderRef]bool
	for _, m := range bySeq {
		if m.OrderSeq == 0 {
			continue
		}
		r := OrderOf(m)
		if l, ok := low[r]; blocked[r] || (ok && l < m.OrderSeq) {
			drop[m] = true
			if dropped == nil {
				dropped = map[OrderRef]bool{}
			}
			dropped[r] = true
			blocked[r] = true
			continue
		}
		if !ahead(m) {
			blocked[r] = true
		}
	}
	keep := f.Sendable[:0]
	for _, m := range f.Sendable {
		if drop[m] {
			if !park.IsZero() {
				m.SendNextAt = park
			}
			m.LeaseToken = 0
			continue
		}
		keep = append(keep, m)
	}
	clear(f.Sendable[len(keep):])
	f.Sendable = keep
	return dropped
}
