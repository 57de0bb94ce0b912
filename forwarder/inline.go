package forwarder

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// DefaultInlineTimeout bounds one inline send (Config.InlineTimeout).
const DefaultInlineTimeout = 2 * time.Second

// inlineSender returns the store.ForwardFunc of one Applier.Apply call: it
// sends the messages the store transaction is about to write sendable,
// before the write, so that each is written once, already sent, instead of
// written leased and then marked sent (the sent-mark UPDATE was half of
// PostgreSQL's work per message). It remembers what it sent, so a
// transaction the store retries does not send a message twice.
//
// With inOrder (store.ApplyRequest.AheadInOrder) it is given several
// messages of an order key, in sequence, and keeps their order: a key's
// messages go to one target in one send (sendRecords: pipelined through
// SendInOrder where they share a forward key on an OrderedTarget, else
// head of line), and once one of a key is not sent, none of its later
// ones is.
func (f *Forwarder) inlineSender(inOrder bool) store.ForwardFunc {
	var mu sync.Mutex // a sharded store calls it concurrently
	sent := map[store.MessageRef]store.Forwarded{}
	return func(ctx context.Context, msgs []state.Message) []store.Forwarded {
		out := make([]store.Forwarded, len(msgs))
		todo := make([]int, 0, len(msgs))
		mu.Lock()
		for i := range msgs {
			if r, ok := sent[store.MessageRef{BizID: msgs[i].BizID, Key: msgs[i].Key}]; ok {
				out[i] = r
				continue
			}
			todo = append(todo, i)
		}
		mu.Unlock()
		f.sendInline(ctx, msgs, todo, out, inOrder)
		mu.Lock()
		for _, i := range todo {
			if out[i].Sent {
				sent[store.MessageRef{BizID: msgs[i].BizID, Key: msgs[i].Key}] = out[i]
			}
		}
		mu.Unlock()
		return out
	}
}

// sendInline sends msgs[i] for each i in todo, by target, and sets out[i]
// for those acknowledged. It leaves a message to the regular path (out[i]
// not sent) when the forwarder is not running, the message's target is not
// configured or its breaker is open, its partition is not owned, it is
// queued or in flight already, or an earlier message with its forward key
// is still queued (sending it now would overtake that one); with inOrder
// (inlineSender), also when an earlier message of its order key in msgs
// is left or goes to another target.
func (f *Forwarder) sendInline(ctx context.Context, msgs []state.Message, todo []int, out []store.Forwarded, inOrder bool) {
	if len(todo) == 0 || !f.running.Load() || f.Stopping() {
		return
	}
	owned := f.view.snapshot()
	byLane := map[*lane][]int{}
	var keyLane map[store.OrderRef]*lane // inOrder: the lane of a key's messages; nil once one is left
	if inOrder {
		keyLane = map[store.OrderRef]*lane{}
	}
	for _, i := range todo {
		m := &msgs[i]
		l := f.lanes[f.targetName(m)]
		if inOrder && m.OrderSeq > 0 {
			r := store.OrderOf(m)
			kl, seen := keyLane[r]
			if seen && kl != l {
				keyLane[r] = nil // left behind one not sent, or on another target
				continue
			}
			keyLane[r] = nil // until it is added below
			if !f.inlineOne(m, l, owned, &out[i]) {
				continue
			}
			keyLane[r] = l
		} else if !f.inlineOne(m, l, owned, &out[i]) {
			continue
		}
		byLane[l] = append(byLane[l], i)
	}
	if len(byLane) == 1 {
		for l, idx := range byLane {
			f.sendInlineLane(ctx, l, msgs, idx, out, inOrder)
		}
		return
	}
	var wg sync.WaitGroup
	for l, idx := range byLane {
		wg.Go(func() { f.sendInlineLane(ctx, l, msgs, idx, out, inOrder) })
	}
	wg.Wait()
}

// inlineOne tells whether m goes inline to l, and counts it in the
// tracker when it does; a message over its bizID's limit is answered
// held (out).
func (f *Forwarder) inlineOne(m *state.Message, l *lane, owned map[int32]struct{}, out *store.Forwarded) bool {
	if l == nil || l.br.isOpen() || l.pace.paused() {
		return false
	}
	if _, ok := owned[m.Partition]; !ok {
		return false
	}
	if !f.fair.allow(m.BizID, true) {
		// Over its bizID's limit: written due and unleased, for a
		// claim the limit allows; never handed over.
		*out = store.Forwarded{Held: true}
		return false
	}
	if m.ForwardKey != "" && len(l.shard(m)) > 0 {
		f.fair.inlineDone(m.BizID)
		return false
	}
	added := f.track.add(m.ID, m.LeaseToken, m.BizID, time.Time{}) // sent before its row is written: no lease yet
	if m.ID != 0 || !added {
		// The tracker counts it (or it is queued already); only new
		// rows, without an id, count as inline sends.
		f.fair.inlineDone(m.BizID)
	}
	return added
}

// sendInlineLane sends one target's part of an inline send. A failure is
// not counted against the message (it is written leased and handed over,
// and the regular path makes the counted attempt), but it counts for the
// target's breaker, so a target that keeps failing is not tried inline
// until it recovers. With inOrder, a batch with several messages of an
// order key goes through sendRecords, as a worker's run does.
func (f *Forwarder) sendInlineLane(ctx context.Context, l *lane, msgs []state.Message, idx []int, out []store.Forwarded, inOrder bool) {
	defer func() {
		for _, i := range idx {
			f.track.done(msgs[i].ID)
			if msgs[i].ID == 0 {
				f.fair.inlineDone(msgs[i].BizID)
			}
		}
	}()
	pass, ok := l.br.allow(f.cfg.Now())
	if !ok {
		return
	}
	recs := make([]Record, len(idx))
	for j, i := range idx {
		recs[j] = BuildRecord(&msgs[i])
	}
	sctx, cancel := context.WithTimeout(ctx, f.cfg.InlineTimeout)
	began := time.Now()
	var res []Result
	if inOrder {
		batch := make([]state.Message, len(idx))
		for j, i := range idx {
			batch[j] = msgs[i]
		}
		var how string
		res, how = sendRecords(sctx, l.target, batch, recs)
		if how != "" {
			f.met.runs.WithLabelValues(how).Add(float64(len(recs)))
		}
	} else {
		res = l.target.Send(sctx, recs)
	}
	cancel()
	l.duration.Observe(time.Since(began).Seconds())
	sent, retryable, busy := 0, 0, false
	for j, i := range idx {
		if j >= len(res) {
			retryable++
			continue
		}
		if res[j].Err == nil {
			out[i] = store.Forwarded{Sent: true, Ref: res[j].Ref}
			sent++
			continue
		}
		switch {
		case errors.Is(res[j].Err, ErrBehindFailed):
			f.met.behind.Inc() // not its fault: the one before it failed
		case IsThrottled(res[j].Err):
			busy = true // the target's flow control: not a failure
		case !IsPermanent(res[j].Err):
			retryable++
		}
	}
	if busy {
		l.pace.busy(began)
	}
	l.sent.Add(float64(sent))
	f.met.inline.WithLabelValues(l.name, resultSent).Add(float64(sent))
	if n := len(idx) - sent; n > 0 {
		f.met.inline.WithLabelValues(l.name, resultNotSent).Add(float64(n))
		f.log.Debug("inline send incomplete; the rest goes the regular way", "target", l.name,
			"sent", sent, "not_sent", n, "err", firstErr(res))
	}
	if ctx.Err() != nil {
		l.br.release(pass) // the caller gave up: says nothing about the target
		return
	}
	cause := ""
	if err := firstErr(res); err != nil {
		cause = err.Error()
	}
	f.settle(l, pass, sent == 0 && retryable > 0, f.cfg.Now(), cause)
}

// firstErr returns the first error among results, for logs.
func firstErr(res []Result) error {
	for _, r := range res {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// recordInline observes the commit-to-sent time of messages an Apply wrote
// sent after sending them inline.
func (f *Forwarder) recordInline(ms []state.Message) {
	now := f.cfg.Now()
	for i := range ms {
		if d := ms[i].DecidedAt; !d.IsZero() {
			f.met.commitToSent.Observe(max(now.Sub(d), 0).Seconds())
		}
	}
	onSent(f, ms, func(m state.Message) string { return m.BizID })
}

// targetName is the target a message is forwarded to.
func (f *Forwarder) targetName(m *state.Message) string {
	if m.Target == "" {
		return f.cfg.DefaultTarget
	}
	return m.Target
}
