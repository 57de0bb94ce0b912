package forwarder

import (
	"context"
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// mark is one successful send waiting to be written.
type mark struct {
	sent    store.Sent
	decided time.Time
	bizID   string
	// ordered: the message has an order sequence; once its mark is
	// written, the next message of its key may be due (rescan).
	ordered bool
}

// failure is one failed send waiting to be written.
type failure struct {
	label  string // target label for metrics
	change store.Change
}

// batchResult is what a worker hands the recorder after one send, or a
// handoff the leases it releases.
type batchResult struct {
	marks  []mark
	fails  []failure
	defers []store.Change // state.KindSendDeferred
	rescan bool           // wake the scan once defers are written
}

// recorder writes sent marks and failures in batches (by size and by
// ticker), retrying with backoff while the store fails, so that a success is
// never dropped silently. It runs on one goroutine.
type recorder struct {
	f      *Forwarder
	marks  []mark
	fails  []failure
	defers []store.Change
	rescan bool
	sents  []store.Sent // reused statement buffer
	errs   int          // consecutive store failures
	retry  *time.Timer  // set while waiting to retry after a failure
}

func (r *recorder) pending() int { return len(r.marks) + len(r.fails) + len(r.defers) }

func (r *recorder) add(b batchResult) {
	r.marks = append(r.marks, b.marks...)
	r.fails = append(r.fails, b.fails...)
	r.defers = append(r.defers, b.defers...)
	r.rescan = r.rescan || b.rescan
}

// record is the recorder's loop; it ends after recStop with a final flush.
func (f *Forwarder) record() {
	r := &recorder{f: f}
	tick := time.NewTicker(f.cfg.MarkInterval)
	defer tick.Stop()
	// Stop taking results while this many wait (the store is failing): the
	// workers block, which stops the sending too.
	maxPending := 16 * f.cfg.MarkBatch
	for {
		in := f.results
		if r.pending() >= maxPending {
			in = nil
		}
		var retryC <-chan time.Time
		if r.retry != nil {
			retryC = r.retry.C
		}
		select {
		case b := <-in:
			r.add(b)
			// The sent marks of ordered messages are written at once: the
			// next message of each key waits for them. With them goes what
			// the other workers handed over meanwhile (while the last
			// write ran), up to a statement's worth: one write, not one
			// per worker batch, when marks come faster than they are
			// written.
			if r.retry == nil && (len(r.marks) >= f.cfg.MarkBatch || hasOrdered(b.marks)) {
				r.takeWaiting(f.cfg.MarkBatch)
				r.flushNow()
			}
		case <-tick.C:
			if r.retry == nil && r.pending() > 0 {
				r.flushNow()
			}
		case <-retryC:
			r.retry = nil
			r.flushNow()
		case <-f.recStop:
			if r.retry != nil {
				r.retry.Stop()
			}
			r.final()
			return
		}
	}
}

// takeWaiting adds the results already waiting, without blocking, until
// n marks are pending.
func (r *recorder) takeWaiting(n int) {
	for len(r.marks) < n {
		select {
		case b := <-r.f.results:
			r.add(b)
		default:
			return
		}
	}
}

// flushNow writes what is pending with the regular context and schedules a
// retry on failure.
func (r *recorder) flushNow() {
	ctx, cancel := context.WithTimeout(r.f.hardCtx, storeWriteTimeout)
	defer cancel()
	if err := r.flush(ctx); err != nil {
		r.errs++
		d := r.f.cfg.StoreBackoff.Delay(r.errs - 1)
		r.f.log.Warn("writing send results failed; retrying",
			"err", err, "pending_marks", len(r.marks), "pending_failures", len(r.fails),
			"pending_releases", len(r.defers), "retry_in", d)
		r.retry = time.NewTimer(d)
		return
	}
	r.errs = 0
}

// final takes the results still queued and writes everything pending with
// Stop's context, retrying until it succeeds or that context ends.
func (r *recorder) final() {
	f := r.f
	for {
		select {
		case b := <-f.results:
			r.add(b)
			continue
		default:
		}
		break
	}
	if r.pending() == 0 {
		return
	}
	ctx := f.hardCtx // ends when Stop's context does
	var prev error
	for attempt := 0; ; attempt++ {
		err := r.flush(ctx)
		if err == nil {
			return
		}
		if prev != nil && ctx.Err() != nil {
			// Report why the store failed, not that we stopped waiting.
			err = fmt.Errorf("%w (gave up: %w)", prev, ctx.Err())
		}
		prev = err
		d := f.cfg.StoreBackoff.Delay(attempt)
		f.log.Warn("writing send results at stop failed; retrying", "err", err, "retry_in", d)
		t := time.NewTimer(d)
		select {
		case <-t.C:
			continue
		case <-ctx.Done():
			t.Stop()
		}
		f.log.Error("stopping with send results not written; those messages will be sent again after their lease",
			"err", err, "marks", len(r.marks), "failures", len(r.fails), "releases", len(r.defers))
		f.stopErr = fmt.Errorf("stop forwarder: %d sent marks and %d send failures not written: %w",
			len(r.marks), len(r.fails), err)
		return
	}
}

// flush writes the pending marks, then the pending failures, in chunks of
// MarkBatch. What is written is removed; on error the rest stays pending.
func (r *recorder) flush(ctx context.Context) error {
	f := r.f
	for len(r.marks) > 0 {
		n := min(len(r.marks), f.cfg.MarkBatch)
		r.sents = r.sents[:0]
		for _, m := range r.marks[:n] {
			r.sents = append(r.sents, m.sent)
		}
		chained, err := r.markSent(ctx)
		if err != nil {
			return fmt.Errorf("mark %d messages sent: %w", n, err)
		}
		now := f.cfg.Now()
		for _, m := range r.marks[:n] {
			// Without the chain, the marks woke the next messages of their
			// keys for the scan.
			r.rescan = r.rescan || (m.ordered && !chained)
			if !m.decided.IsZero() {
				f.met.commitToSent.Observe(max(now.Sub(m.decided), 0).Seconds())
			}
		}
		onSent(f, r.marks[:n], func(m mark) string { return m.bizID })
		r.marks = shift(r.marks, n)
	}
	for len(r.fails) > 0 {
		n := min(len(r.fails), f.cfg.MarkBatch)
		changes := make([]store.Change, n)
		for i, fl := range r.fails[:n] {
			changes[i] = fl.change
		}
		res, err := f.st.Apply(ctx, store.ApplyRequest{Changes: changes})
		if err != nil {
			return fmt.Errorf("record %d send failures: %w", n, err)
		}
		// A head given up with its key released (DEAD, skip) woke the
		// next message of its key.
		r.rescan = r.rescan || res.Woken > 0
		for i, fl := range r.fails[:n] {
			var o store.ChangeOutcome
			if i < len(res.Outcomes) {
				o = res.Outcomes[i]
			}
			r.count(fl, o)
		}
		r.fails = shift(r.fails, n)
	}
	for len(r.defers) > 0 {
		n := min(len(r.defers), f.cfg.MarkBatch)
		res, err := f.st.Apply(ctx, store.ApplyRequest{Changes: r.defers[:n]})
		if err != nil {
			return fmt.Errorf("release the leases of %d dropped handoffs: %w", n, err)
		}
		released := 0
		for _, o := range res.Outcomes {
			if o.Err == nil && o.Effect == state.Changed {
				released++
			}
		}
		f.met.released.Add(float64(released))
		r.defers = shift(r.defers, n)
	}
	if r.rescan {
		// Released handoffs are due now, and so may be the next messages
		// of the order keys just marked sent: claim them as soon as the
		// queues have room.
		r.rescan = false
		f.wakeScan()
	}
	return nil
}

// nextClaimer is a store that leases the next message of an order key
// with its predecessor's sent mark (store.NextClaimer).
type nextClaimer interface {
	MarkSentClaimNext(ctx context.Context, sent []store.Sent, c store.Claim) ([]state.Message, int, error)
}

var _ nextClaimer = store.NextClaimer(nil) // the same method

// markSent writes r.sents. With per-key order on and a store that can, the
// next message of each ordered one's key is leased once the marks are
// committed, in the same round trip, and queued at once (its worker sends it next), instead of
// being woken for the scan's next claim: the key's messages go one after
// the other at the pace of a send and a mark. Not while stopping: the
// workers may be gone, and the wake leaves the next ones to the claims.
// It tells whether it chained (then the scan runs only for what the store
// woke instead of leasing).
func (r *recorder) markSent(ctx context.Context) (bool, error) {
	f := r.f
	nc, ok := f.st.(nextClaimer)
	if !ok || f.Stopping() || !hasOrderedSent(r.sents) || !f.cfg.Ordered() {
		return false, f.st.MarkSent(ctx, r.sents)
	}
	parts := f.owned.Partitions()
	next, woken, err := nc.MarkSentClaimNext(ctx, r.sents, store.Claim{Partitions: parts, Limit: max(len(r.sents), f.cfg.ClaimLimit),
		Lease: f.cfg.Lease, Ordered: true, Run: f.run()})
	if err != nil {
		return false, err
	}
	r.rescan = r.rescan || woken > 0
	if len(next) == 0 {
		return true, nil
	}
	f.met.chained.Add(float64(len(next)))
	// The recorder must not wait for itself: what finds no room is
	// released with the next flush, what names an unconfigured target
	// fails with it.
	_, released, unknown := f.enqueue(next, 0, true, false)
	if len(released) > 0 {
		r.defers = append(r.defers, released...)
		r.rescan = true
	}
	r.fails = append(r.fails, unknown...)
	return true, nil
}

// hasOrderedSent tells whether one of sent is an ordered message's.
func hasOrderedSent(sent []store.Sent) bool {
	for _, x := range sent {
		if x.Ordered {
			return true
		}
	}
	return false
}

// count updates the metrics and logs for one recorded failure.
func (r *recorder) count(fl failure, o store.ChangeOutcome) {
	f := r.f
	c := &fl.change
	id := c.BizID + ":" + c.Key
	switch {
	case o.Err != nil:
		f.log.Warn("send failure not recorded", "id", id, "err", o.Err)
	case o.Stale:
		f.log.Debug("send failure of a lease taken over since; ignored", "id", id)
	case o.Dead:
		f.met.forward.WithLabelValues(fl.label, resultDead).Inc()
		f.met.dead.WithLabelValues(fl.label).Inc()
		f.log.Error("message is DEAD: send given up", "id", id, "target", fl.label,
			"permanent", c.Event.Permanent, "err", c.Event.Err)
	case o.Effect == state.Changed:
		f.met.forward.WithLabelValues(fl.label, resultRetry).Inc()
		f.log.Warn("send failed; will retry", "id", id, "target", fl.label,
			"retry_at", c.Event.RetryAt, "err", c.Event.Err)
	}
}

// shift drops the first n elements, reusing the array.
func shift[T any](s []T, n int) []T {
	m := copy(s, s[n:])
	clear(s[m:])
	return s[:m]
}

// onSent counts the sends of xs per bizID (the fair-share view and
// metrics) and calls Config.OnSent once per bizID.
func onSent[T any](f *Forwarder, xs []T, bizID func(T) string) {
	if len(xs) == 0 {
		return
	}
	n := map[string]int{}
	for _, x := range xs {
		n[bizID(x)]++
	}
	for b, k := range n {
		f.fair.sent(b, k)
		if f.cfg.OnSent != nil {
			f.cfg.OnSent(b, k)
		}
	}
}

// hasOrdered tells whether one of ms is the sent mark of an ordered
// message.
func hasOrdered(ms []mark) bool {
	for _, m := range ms {
		if m.ordered {
			return true
		}
	}
	return false
}
