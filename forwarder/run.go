package forwarder

import (
	"context"
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// run is the longest run of one order key's messages a claim or a sent
// mark leases (store.Claim.Run): a worker's batch, as long as a queue
// shard holds it; 0 with per-key order off.
func (f *Forwarder) run() int {
	if !f.cfg.Ordered() {
		return 0
	}
	return max(1, min(f.cfg.BatchSize, f.cfg.QueueSize/f.cfg.Concurrency))
}

// runGuard is one worker's memory of the runs it failed: once a message of
// a run (the messages of an order key leased together, with one lease
// token) is not sent, the later ones of that run must not be sent either,
// whichever batch of the worker they come in. A message leased with
// another token was claimed after the failure, free of it, and clears it.
type runGuard struct {
	failed map[store.OrderRef]runFailure
}

type runFailure struct {
	token, seq int64
	at         time.Time
}

// fail notes that m, an ordered message, was not sent.
func (g *runGuard) fail(m *state.Message, now time.Time) {
	if m.OrderSeq == 0 {
		return
	}
	r := store.OrderOf(m)
	if x, ok := g.failed[r]; ok && x.token == m.LeaseToken && x.seq <= m.OrderSeq {
		return
	}
	if g.failed == nil {
		g.failed = map[store.OrderRef]runFailure{}
	}
	g.failed[r] = runFailure{token: m.LeaseToken, seq: m.OrderSeq, at: now}
}

// behind tells whether m comes after a message of its run that was not
// sent; a message of its key leased with another token clears the note.
func (g *runGuard) behind(m *state.Message) bool {
	if m.OrderSeq == 0 || len(g.failed) == 0 {
		return false
	}
	r := store.OrderOf(m)
	x, ok := g.failed[r]
	if !ok {
		return false
	}
	if x.token != m.LeaseToken {
		delete(g.failed, r)
		return false
	}
	return m.OrderSeq > x.seq
}

// sweep forgets the failures older than a lease: the rest of their runs'
// leases ran out, and such messages are not sent (fencing).
func (g *runGuard) sweep(now time.Time, lease time.Duration) {
	if len(g.failed) < 64 {
		return
	}
	for r, x := range g.failed {
		if now.Sub(x.at) > lease {
			delete(g.failed, r)
		}
	}
}

// sendRecords sends one batch's records. Several messages of one order
// key (a run) go through SendInOrder where the target keeps a forward
// key's order (OrderedTarget) and the key's messages share one forward
// key; else head of line (sendHeadOfLine). A batch without two messages of
// one key goes with Send. how is sendInOrder or sendHeadOfLineLabel for
// a batch with a run, else "".
func sendRecords(ctx context.Context, t Target, batch []state.Message, recs []Record) (res []Result, how string) {
	fkeys := map[store.OrderRef]string{}
	runs, oneKey := false, true
	for i := range batch {
		if batch[i].OrderSeq == 0 {
			continue
		}
		r := store.OrderOf(&batch[i])
		fk, seen := fkeys[r]
		if !seen {
			fkeys[r] = recs[i].Key
			continue
		}
		runs = true
		oneKey = oneKey && fk != "" && fk == recs[i].Key
	}
	switch ot, ok := t.(OrderedTarget); {
	case !runs:
		return t.Send(ctx, recs), ""
	case ok && oneKey:
		return ot.SendInOrder(ctx, recs), sendInOrder
	}
	return sendHeadOfLine(ctx, t, batch, recs), sendHeadOfLineLabel
}

// The send label values of eventcenter_forward_order_run_messages_total.
const (
	sendInOrder         = "in_order"
	sendHeadOfLineLabel = "head_of_line"
)

// sendHeadOfLine sends recs with Send in rounds, each with at most one
// message of each order key, so that a key's next message goes only once
// the one before it was acknowledged; once one fails, the later ones of
// its key fail with ErrBehindFailed, unsent. Messages without an order key
// go in the first round.
func sendHeadOfLine(ctx context.Context, t Target, batch []state.Message, recs []Record) []Result {
	res := make([]Result, len(recs))
	done := make([]bool, len(recs))
	failed := map[store.OrderRef]error{}
	for left := len(recs); left > 0; {
		var idx []int
		var round []Record
		taken := map[store.OrderRef]bool{}
		for i := range recs {
			if done[i] {
				continue
			}
			m := &batch[i]
			r := store.OrderOf(m)
			if m.OrderSeq > 0 {
				if cause, ok := failed[r]; ok {
					res[i] = Result{Err: fmt.Errorf("%w: %w", ErrBehindFailed, cause)}
					done[i] = true
					left--
					continue
				}
				if taken[r] {
					continue
				}
				taken[r] = true
			}
			idx = append(idx, i)
			round = append(round, recs[i])
		}
		if len(idx) == 0 {
			break
		}
		got := t.Send(ctx, round)
		for j, i := range idx {
			if j < len(got) {
				res[i] = got[j]
			} else {
				res[i] = Result{Err: fmt.Errorf("forward target returned %d results for %d records", len(got), len(round))}
			}
			done[i] = true
			left--
			if m := &batch[i]; m.OrderSeq > 0 && res[i].Err != nil {
				failed[store.OrderOf(m)] = res[i].Err
			}
		}
	}
	return res
}
