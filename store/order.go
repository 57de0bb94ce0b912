package store

import (
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
