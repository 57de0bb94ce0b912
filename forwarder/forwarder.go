package forwarder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/internal/startstop"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// unconfiguredLabel is the target label of messages naming a target that is
// not configured (the name itself is producer-chosen, so not a label).
const unconfiguredLabel = "unconfigured"

// storeWriteTimeout bounds one regular write of marks or failures.
const storeWriteTimeout = 30 * time.Second

// Forwarder sends committed messages to their targets. Create it with New,
// then Start it; Handoff is safe for concurrent use at any time.
type Forwarder struct {
	cfg   Config
	st    Store
	owned Owned
	view  ownedView
	log   *slog.Logger
	met   *metrics

	lanes map[string]*lane
	track tracker // messages queued or in flight
	fair  *fairness
	// results carries send outcomes from the workers to the recorder.
	results chan batchResult
	// rescan wakes the scan (released handoffs are due).
	rescan chan struct{}
	// lowWater is set while a fair scan waits for the queue to drain to
	// its low water mark (see scan); the worker that drains it there
	// clears it and wakes the scan.
	lowWater atomic.Bool

	running atomic.Bool // started: workers drain the queues, so a handoff may wait

	// Base gives Stop and the shared start/stop semantics; Handoff drops
	// once it is Stopping.
	startstop.Base

	// hardCtx is the run's Work context: it ends when Stop's context ends
	// (abort in-flight sends; the final flush gives up) or after the run.
	hardCtx  context.Context
	stopReq  <-chan struct{} // closed by Stop; set by Start
	draining chan struct{}   // closed: workers finish their queues and exit
	recStop  chan struct{}   // closed: the recorder flushes and exits
	stopErr  error           // set by the recorder before it exits
}

// lane is one target: its queue and its workers.
type lane struct {
	name   string
	target Target
	// shards are the queues, one per worker: messages with the same
	// forward key share a shard, so one worker sends them in order.
	shards   []chan state.Message
	rr       atomic.Uint32 // spreads messages without a forward key
	sent     prometheus.Counter
	deferred prometheus.Counter
	open     prometheus.Gauge
	duration prometheus.Observer
	br       *breaker
	// pace holds its sends while the target throttles (throttle.go).
	pace *pacer
}

// New returns a Forwarder over the targets in cfg. It does not take
// ownership of the targets.
func New(cfg Config, st Store, owned Owned) (*Forwarder, error) {
	if st == nil {
		return nil, errors.New("forwarder: nil Store")
	}
	if owned == nil {
		return nil, errors.New("forwarder: nil Owned")
	}
	cfg.Targets = maps.Clone(cfg.Targets)
	cfg.Biz = maps.Clone(cfg.Biz)
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	met, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	f := &Forwarder{
		cfg:      cfg,
		st:       st,
		owned:    owned,
		view:     ownedView{owned: owned},
		log:      cfg.Logger,
		met:      met,
		lanes:    make(map[string]*lane, len(cfg.Targets)),
		results:  make(chan batchResult, 2*cfg.Concurrency*len(cfg.Targets)+16),
		rescan:   make(chan struct{}, 1),
		draining: make(chan struct{}),
		recStop:  make(chan struct{}),
	}
	f.fair = newFairness(cfg.Biz, cfg.MetricBizIDs, cfg.Now, &f.track, met.fair)
	for name, t := range cfg.Targets {
		f.lanes[name] = f.newLane(name, t)
	}
	// Touch the labels so dashboards see zeros rather than nothing.
	for _, name := range append(slices.Collect(maps.Keys(cfg.Targets)), unconfiguredLabel) {
		for _, r := range []string{resultSent, resultRetry, resultDead, resultDeferred} {
			met.forward.WithLabelValues(name, r)
		}
		met.dead.WithLabelValues(name)
		if name != unconfiguredLabel && cfg.InlineTimeout > 0 {
			met.inline.WithLabelValues(name, resultSent)
			met.inline.WithLabelValues(name, resultNotSent)
		}
	}
	return f, nil
}

func (f *Forwarder) newLane(name string, t Target) *lane {
	shards := make([]chan state.Message, f.cfg.Concurrency)
	for i := range shards {
		shards[i] = make(chan state.Message, max(1, f.cfg.QueueSize/f.cfg.Concurrency))
	}
	l := &lane{
		name:     name,
		target:   t,
		shards:   shards,
		sent:     f.met.forward.WithLabelValues(name, resultSent),
		deferred: f.met.forward.WithLabelValues(name, resultDeferred),
		open:     f.met.breakerOpen.WithLabelValues(name),
		duration: f.met.duration.WithLabelValues(name),
		br:       newBreaker(f.cfg.Breaker.Failures, f.cfg.Breaker.FailingFor, f.cfg.Breaker.Cooldown, f.cfg.Breaker.MaxCooldown),
		pace:     newPacer(&f.met.throttleMetrics, name),
	}
	if src, ok := t.(ThrottleSource); ok {
		src.OnThrottle(l.pace.throttle)
	}
	return l
}

// Start starts the scan, the per-target send workers and the sent-mark
// writer, and returns at once. When ctx ends the scan stops (no new claims),
// but handed-over messages are still sent, and their marks written, until
// Stop: the caller stops ingest first, and what ingest hands over while it
// stops must not be abandoned. Stop must be called to end the forwarder.
//
// Stop (startstop.Base's) stops scanning, lets the workers finish the
// sends in flight and the messages already queued, writes the pending sent
// marks and failures, and waits for every goroutine. When Stop's ctx ends
// first, in-flight sends are cancelled (their messages come back after the
// lease) and marks that could not be written are reported in the error:
// those messages will be sent again (at least once). Stop before Start
// refuses a later Start.
func (f *Forwarder) Start(ctx context.Context) error {
	return f.StartFunc(ctx, func(r startstop.Run) (func() error, error) {
		f.stopReq = r.Stopping // before running: route reads it once running
		f.running.Store(true)
		// Sends and store writes outlive ctx; Stop's context bounds them.
		f.hardCtx = r.Work
		scanDone := make(chan struct{})
		go func() {
			defer close(scanDone)
			f.scanLoop(r.Ctx)
		}()
		var workers sync.WaitGroup
		for _, name := range slices.Sorted(maps.Keys(f.lanes)) {
			l := f.lanes[name]
			for _, ch := range l.shards {
				workers.Go(func() { f.work(l, ch) })
			}
		}
		recDone := make(chan struct{})
		go func() {
			defer close(recDone)
			f.record()
		}()
		// The shutdown order: scan first, then the workers drain their
		// queues, then the recorder writes what is pending.
		return func() error {
			<-r.Stopping
			<-scanDone // the scan's context ended with Stop
			close(f.draining)
			workers.Wait()
			close(f.recStop)
			<-recDone
			return f.stopErr
		}, nil
	})
}

// Handoff queues messages for sending at once: the fast path used by ingest
// and the verifier for messages that just became sendable (leased by the
// store). When a target's queue is full it waits for room, so that the
// caller slows to the forwarding rate, for at most HandoffWait in all and
// never past Stop. What still finds no room is dropped and counted, and its
// lease is released (state.KindSendDeferred, written with the sent marks):
// it is due at once, and the scan, woken, claims it as soon as the queues
// have room, instead of after its lease. What is handed over for a target
// whose breaker is open (its queue is not drained by sending; the lease is
// the pause), and what is handed over before Start or while stopping is
// dropped and counted too, and left to its lease. The slice may be reused
// after Handoff returns.
func (f *Forwarder) Handoff(msgs []state.Message) {
	if f.Stopping() {
		f.met.dropped.Add(float64(len(msgs)))
		return
	}
	wait := f.cfg.HandoffWait
	running := f.running.Load()
	if !running {
		wait = 0 // no workers yet: nothing would make room
	}
	f.route(msgs, wait, running, true)
}

// shard returns the queue for a message: by order key for a sequenced
// one (a run of its key, whatever their forward keys, goes through one
// worker in order), else by forward key, or round robin for messages
// without one.
func (l *lane) shard(m *state.Message) chan state.Message {
	n := uint32(len(l.shards))
	if n == 1 {
		return l.shards[0]
	}
	key := m.ForwardKey
	if m.OrderSeq > 0 {
		key = m.OrderKey
	}
	if key == "" {
		return l.shards[l.rr.Add(1)%n]
	}
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return l.shards[h%n]
}

// lowWaterMark is how far a lane's queue drains before a fair scan claims
// again: an eighth of a claim.
func (f *Forwarder) lowWaterMark() int { return f.cfg.ClaimLimit / 8 }

// queuedLeast is what waits in the least loaded lane's queue.
func (f *Forwarder) queuedLeast() int {
	least := -1
	for _, l := range f.lanes {
		if q := l.queued(); least < 0 || q < least {
			least = q
		}
	}
	return max(least, 0)
}

// queued is what waits in the lane's queues.
func (l *lane) queued() int {
	n := 0
	for _, ch := range l.shards {
		n += len(ch)
	}
	return n
}

// room is the free space of the lane's queues.
func (l *lane) room() int {
	n := 0
	for _, ch := range l.shards {
		n += cap(ch) - len(ch)
	}
	return n
}

// route puts messages on their targets' queues, waiting for room for at
// most wait in all (<= 0: not at all; the scan must not wait, or one stuck
// target would stop the others' retries); messages naming an unconfigured
// target are failed permanently. While running, what finds no room in a
// healthy target's queue has its lease released (see Handoff); after a
// handoff's releases the scan is woken at once, after a scan's it runs at
// its next interval (so that a target whose queue stays full is not
// claimed for in a loop). It returns how many it dropped.
func (f *Forwarder) route(msgs []state.Message, wait time.Duration, release, handoff bool) int {
	dropped, released, unknown := f.enqueue(msgs, wait, release, handoff)
	if len(released) > 0 {
		f.release(released, handoff)
	}
	if len(unknown) == 0 {
		return dropped
	}
	select {
	case f.results <- batchResult{fails: unknown}:
	default:
		f.met.dropped.Add(float64(len(unknown)))
		dropped += len(unknown)
	}
	return dropped
}

// enqueue is route's queueing: it returns how many it dropped, the lease
// releases of those (with release) and the failures of messages naming an
// unconfigured target, for the caller to hand to the recorder (the
// recorder itself keeps them). With handoff, a message over its bizID's
// limit (BizLimits) is not queued: its lease is released (with release).
// Claimed messages were counted against the limits by the claim. Once a
// message with an order key is not queued, the later ones of its key in
// msgs (its run: store.Claim.Run) are not queued either: their leases are
// released (due at once; the claims skip them while it holds the key).
func (f *Forwarder) enqueue(msgs []state.Message, wait time.Duration, release, handoff bool) (int, []store.Change, []failure) {
	dropped := 0
	var unknown []failure
	var released []store.Change
	var expired <-chan time.Time    // armed at the first full queue
	var cut map[store.OrderRef]bool // order keys with a message not queued
	notQueued := func(m *state.Message) {
		if m.OrderSeq > 0 {
			if cut == nil {
				cut = map[store.OrderRef]bool{}
			}
			cut[store.OrderOf(m)] = true
		}
	}
	for i := range msgs {
		m := &msgs[i]
		if m.OrderSeq > 0 && cut[store.OrderOf(m)] {
			if m.ID != 0 && !f.Stopping() {
				released = append(released, f.newRelease(m, m.LeaseToken))
			}
			f.met.behind.Inc()
			continue
		}
		name := f.targetName(m)
		l := f.lanes[name]
		if l == nil {
			err := Permanent(fmt.Errorf("forward target %q is not configured", name))
			unknown = append(unknown, f.newFailure(unconfiguredLabel, m, err, f.cfg.Now()))
			continue
		}
		if handoff && !f.fair.allow(m.BizID, false) {
			// Over its bizID's limit: it waits, due at once, for a claim
			// the limit allows (a limit never fails a message).
			if release && m.ID != 0 && !f.Stopping() {
				released = append(released, f.newRelease(m, m.LeaseToken))
			}
			notQueued(m)
			continue
		}
		if !f.track.add(m.ID, m.LeaseToken, m.BizID, f.leaseEnd(m)) {
			notQueued(m)
			continue // already queued or in flight; its newer lease is noted
		}
		ch := l.shard(m)
		select {
		case ch <- *m:
			continue
		default:
		}
		if wait > 0 && !l.br.isOpen() {
			if expired == nil {
				timer := time.NewTimer(wait)
				defer timer.Stop()
				expired = timer.C
			}
			select {
			case ch <- *m:
				continue
			case <-expired:
				wait = 0 // the budget is spent: drop the rest of full queues at once
			case <-f.stopReq:
				wait = 0
			}
		}
		// A scan that claimed it again while it waited (not before its
		// lease ran out, longer than HandoffWait) is dropped with it.
		notQueued(m)
		tok := f.track.done(m.ID)
		f.met.dropped.Inc()
		dropped++
		if release && m.ID != 0 && !l.br.isOpen() && !f.Stopping() {
			if tok == 0 {
				tok = m.LeaseToken
			}
			released = append(released, f.newRelease(m, tok))
		}
	}
	return dropped, released, unknown
}

// leaseEnd is when a handed-over or claimed message's lease runs out: its
// due time, which the claim (or the fast path's Apply) set to the lease's
// end. Zero when the row is not leased (due already).
func (f *Forwarder) leaseEnd(m *state.Message) time.Time {
	if m.LeaseToken == 0 || !m.SendNextAt.After(f.cfg.Now()) {
		return time.Time{}
	}
	return m.SendNextAt
}

// settle records a batch's outcome in its target's breaker (failed: nothing
// acknowledged and something worth retrying) and reports the breaker
// opening (with cause, the batch's first error) or closing.
func (f *Forwarder) settle(l *lane, p pass, failed bool, now time.Time, cause string) {
	switch opened, closed, pause := l.br.done(p, failed, now); {
	case opened:
		l.open.Set(1)
		f.log.Warn("forward target keeps failing; pausing its sends", "target", l.name,
			"cooldown", pause, "err", cause)
	case closed:
		l.open.Set(0)
		f.log.Info("forward target recovered; sends resumed", "target", l.name)
	}
}

// newRelease builds the KindSendDeferred change that makes a dropped
// handoff due now, if the row still carries lease token tok.
func (f *Forwarder) newRelease(m *state.Message, tok int64) store.Change {
	now := f.cfg.Now()
	return store.Change{
		BizID:      m.BizID,
		Key:        m.Key,
		Partition:  m.Partition,
		LeaseToken: tok,
		Event:      state.Event{Kind: state.KindSendDeferred, At: now, RetryAt: now},
	}
}

// release hands lease releases to the recorder, which writes them with the
// sent marks. It waits for the recorder (the caller, a handoff, already
// slows to the forwarder's pace) but not past Stop: then the leases bring
// the messages back.
func (f *Forwarder) release(changes []store.Change, rescan bool) {
	select {
	case f.results <- batchResult{defers: changes, rescan: rescan}:
	case <-f.stopReq:
	}
}

// newFailure builds the KindSendFailed change for a failed send.
func (f *Forwarder) newFailure(label string, m *state.Message, err error, now time.Time) failure {
	return failure{
		label: label,
		change: store.Change{
			BizID:      m.BizID,
			Key:        m.Key,
			Partition:  m.Partition,
			LeaseToken: m.LeaseToken,
			Event: state.Event{
				Kind:          state.KindSendFailed,
				At:            now,
				RetryAt:       now.Add(f.cfg.Backoff.Delay(m.SendAttempts)),
				MaxAttempts:   f.cfg.MaxAttempts,
				Permanent:     IsPermanent(err),
				Err:           err.Error(),
				ReleaseOnDead: m.OrderSeq > 0 && f.cfg.ReleaseOnDead(m.BizID),
			},
		},
	}
}

// giveBack releases the leases of claimed messages that will not be sent
// (the scan's claim returned after Stop came): due at once for whoever
// owns their partitions next. The recorder writes them; it runs until
// the workers are gone, after the scan.
func (f *Forwarder) giveBack(msgs []state.Message) {
	if len(msgs) == 0 {
		return
	}
	rel := make([]store.Change, 0, len(msgs))
	for i := range msgs {
		rel = append(rel, f.newRelease(&msgs[i], msgs[i].LeaseToken))
	}
	select {
	case f.results <- batchResult{defers: rel}:
	case <-f.hardCtx.Done():
	}
}

// wakeScan makes the scan claim at once (it does not wait for it).
func (f *Forwarder) wakeScan() {
	select {
	case f.rescan <- struct{}{}:
	default:
	}
}

// scanLoop claims due sends periodically and whenever ownership changes.
func (f *Forwarder) scanLoop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	changed := f.owned.Changed()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-changed:
		case <-f.rescan:
		}
		// Taken before the scan reads the partitions: a change during the
		// scan closes it and scans again at once.
		changed = f.owned.Changed()
		next := f.cfg.ScanInterval
		switch f.scan(ctx) {
		case scanMore:
			next = 0 // more are due: claim again at once
		case scanThrottled:
			next = min(next, ThrottleRescan) // claim as the limits allow
		case scanBusy:
			// Messages are falling due (scheduled ones, retries): look
			// again soon rather than a whole interval later.
			next = f.cfg.BusyScanInterval
		}
		timer.Reset(next)
	}
}

// scan claims due sends in the owned partitions, as many as the queues have
// room for, fairly between bizIDs within their limits (store.Fair; unless
// OldestFirst), and queues them. It tells whether the claim was full
// (scanMore), cut short by a bizID's limit (scanThrottled), or claimed
// something (scanBusy).
func (f *Forwarder) scan(ctx context.Context) int {
	parts := f.owned.Partitions()
	if len(parts) == 0 {
		return scanIdle
	}
	// Claim no more than the roomiest queue takes. A claim cannot choose
	// targets, so a full queue (a slow or broken target) must not stop the
	// others' retries: what does not fit is dropped and comes back after
	// its lease.
	room := 0
	for _, l := range f.lanes {
		room = max(room, l.room())
	}
	limit := min(f.cfg.ClaimLimit, room)
	if limit <= 0 {
		return scanIdle // every queue is full; the workers are behind
	}
	if !f.cfg.OldestFirst && f.queuedLeast() > f.lowWaterMark() {
		// Fair claims order what waits in the store; what waits in the
		// queue goes first-come. Claiming half a claim at a time, and
		// again only once the queue is down to its low water mark, puts
		// a bizID's message that falls due behind at most that much of
		// another's (plus the batches in flight) instead of a full queue
		// (QueueSize): within one claim. The worker that drains the queue
		// to the mark wakes the scan.
		f.lowWater.Store(true)
		if f.queuedLeast() <= f.lowWaterMark() && f.lowWater.CompareAndSwap(true, false) {
			return scanMore // drained before the mark was set: no worker will wake it
		}
		return scanIdle
	}
	if !f.cfg.OldestFirst {
		limit = min(limit, max(1, f.cfg.ClaimLimit/2))
	}
	claim := store.Claim{Partitions: parts, Limit: limit, Lease: f.cfg.Lease, Ordered: f.cfg.Ordered(), Run: f.run()}
	var cut map[string]string
	if !f.cfg.OldestFirst {
		claim.FairSends, cut = f.fair.claim(limit)
	}
	// The claim runs on the hard context, not ctx: cancelled by Stop, a
	// claim whose statement had already committed on the server returned
	// an error instead of its messages, which then stayed leased for the
	// whole lease. What a claim returns once Stop came is given back.
	msgs, err := f.st.ClaimSends(f.hardCtx, claim)
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("claim due sends failed; retrying at the next scan", "err", err)
		}
		return scanIdle
	}
	if ctx.Err() != nil {
		f.giveBack(msgs)
		return scanIdle
	}
	res := scanIdle
	if len(msgs) > 0 {
		res = scanBusy
	}
	if claim.FairSends != nil {
		got := map[string]int{}
		for i := range msgs {
			got[msgs[i].BizID]++
		}
		if f.fair.claimed(claim.FairSends, cut, got) {
			res = scanThrottled
		}
		if len(got) > 1 {
			msgs = interleaveBizIDs(msgs)
		}
	}
	dropped := 0
	if len(msgs) > 0 {
		f.log.Debug("claimed due sends", "n", len(msgs))
		// What finds no room (a shard of a queue may be full while the
		// queue has room) is released: due again at the next scan.
		dropped = f.route(msgs, 0, true, false)
	}
	// Claim again at once only while everything claimed found room.
	if len(msgs) == limit && dropped == 0 {
		return scanMore
	}
	return res
}

// What a scan found: nothing more to claim now, more due at once,
// messages a limit held back (claim again after ThrottleRescan), or some
// claimed (claim again after BusyScanInterval).
const (
	scanIdle = iota
	scanMore
	scanThrottled
	scanBusy
)

// work is one send worker of a lane: it takes what is queued in its shard,
// up to BatchSize, and sends it as one batch.
func (f *Forwarder) work(l *lane, ch chan state.Message) {
	batch := make([]state.Message, 0, f.cfg.BatchSize)
	recs := make([]Record, 0, f.cfg.BatchSize)
	var g runGuard
	for {
		batch = batch[:0]
		select {
		case m := <-ch:
			batch = append(batch, m)
		case <-f.draining:
			if f.hardCtx.Err() != nil {
				return // aborted: what is queued comes back after its lease
			}
			select {
			case m := <-ch:
				batch = append(batch, m)
			default:
				return
			}
		}
	fill:
		for len(batch) < f.cfg.BatchSize {
			select {
			case m := <-ch:
				batch = append(batch, m)
			default:
				break fill
			}
		}
		if f.lowWater.Load() && l.queued() <= f.lowWaterMark() && f.lowWater.CompareAndSwap(true, false) {
			f.wakeScan()
		}
		recs = f.send(l, batch, recs[:0], &g)
	}
}

// send sends one batch and hands the outcomes to the recorder. It returns
// recs for reuse. g is the worker's memory of failed runs: a message behind
// one of its run (the messages of an order key leased together) that was
// not sent is not sent either; its lease is released, without an attempt.
func (f *Forwarder) send(l *lane, batch []state.Message, recs []Record, g *runGuard) []Record {
	owned := f.view.snapshot()
	keep := batch[:0]
	var br batchResult
	expired := 0
	checkedAt := f.cfg.Now()
	g.sweep(checkedAt, f.cfg.Lease)
	for _, m := range batch {
		_, ours := owned[m.Partition]
		// Fencing: a message whose lease ran out while it waited here (a
		// slow or cut-off target ahead of it, an instance cut off from its
		// store and its broker) may have been claimed and sent by another
		// instance since; it is not sent. The partition's owner claims it
		// again if it is still due.
		until := f.track.until(m.ID)
		lapsed := !until.IsZero() && !checkedAt.Before(until)
		behind := g.behind(&m)
		if ours && !lapsed && !behind {
			keep = append(keep, m)
			continue
		}
		g.fail(&m, checkedAt)
		// Its lease is released (if the row still carries it), so the
		// partition's owner sends it at its next scan instead of after
		// the lease.
		tok := f.track.done(m.ID)
		if tok == 0 {
			tok = m.LeaseToken
		}
		if m.ID != 0 {
			br.defers = append(br.defers, f.newRelease(&m, tok))
		}
		if lapsed {
			expired++
			continue
		}
		if behind {
			l.deferred.Inc()
			f.met.behind.Inc()
			continue
		}
		f.log.Debug("skipping send of a message whose partition is no longer owned; lease released",
			"id", m.MessageID(), "partition", m.Partition)
	}
	if expired > 0 {
		l.deferred.Add(float64(expired))
		f.log.Warn("messages whose send lease ran out before their send were not sent (another instance may own them now); leases released",
			"target", l.name, "n", expired)
	}
	if len(keep) == 0 {
		f.hand(l, br)
		return recs
	}
	// While the target throttles, wait (not past a stop; then the leases
	// bring the messages back).
	paced := l.pace.wait(f.hardCtx, f.stopReq)
	pass, ok := l.br.allow(f.cfg.Now())
	if ok && !paced {
		l.br.release(pass)
		ok = false
	}
	if !ok {
		for i := range keep {
			f.track.done(keep[i].ID)
			g.fail(&keep[i], checkedAt)
		}
		l.deferred.Add(float64(len(keep)))
		f.hand(l, br)
		return recs
	}
	for i := range keep {
		recs = append(recs, BuildRecord(&keep[i]))
	}
	ctx, cancel := context.WithTimeout(f.hardCtx, f.cfg.SendTimeout)
	began := time.Now()
	res, how := sendRecords(ctx, l.target, keep, recs)
	cancel()
	if how != "" {
		f.met.runs.WithLabelValues(how).Add(float64(len(keep)))
	}
	l.duration.Observe(time.Since(began).Seconds())
	aborted := f.hardCtx.Err() != nil

	now := f.cfg.Now()
	retryable := 0
	var busy []*state.Message // answered busy: put off, no attempt spent
	capped := false
	for i := range keep {
		m := &keep[i]
		claimed := m.LeaseToken
		if tok := f.track.done(m.ID); tok != 0 {
			m.LeaseToken = tok // claimed again while it waited: the newest lease
		}
		capped = capped || f.fair.capped(m.BizID)
		var err error
		if i < len(res) {
			err = res[i].Err
		} else {
			err = fmt.Errorf("forward target %q returned %d results for %d records", l.name, len(res), len(recs))
		}
		if err == nil {
			l.sent.Inc()
			if !m.DeliverAt.IsZero() {
				f.met.lateness.Observe(max(now.Sub(m.DeliverAt), 0).Seconds())
			}
			br.marks = append(br.marks, mark{
				sent: store.Sent{ID: m.ID, Ref: res[i].Ref, Ordered: m.OrderSeq > 0}, decided: m.DecidedAt, bizID: m.BizID, ordered: m.OrderSeq > 0,
			})
			continue
		}
		if m.OrderSeq > 0 {
			g.fail(&state.Message{BizID: m.BizID, OrderKey: m.OrderKey, Target: m.Target, Topic: m.Topic,
				OrderSeq: m.OrderSeq, LeaseToken: claimed}, now)
		}
		if aborted {
			continue // stopping: do not burn an attempt; the lease brings it back
		}
		if errors.Is(err, ErrBehindFailed) {
			// Not sent, behind a failed one of its key: no attempt spent,
			// due at once (the claims skip it while that one holds the key).
			br.defers = append(br.defers, f.newRelease(m, m.LeaseToken))
			l.deferred.Inc()
			f.met.behind.Inc()
			continue
		}
		if IsThrottled(err) {
			busy = append(busy, m)
			continue
		}
		f.log.Debug("send failed", "target", l.name, "id", m.MessageID(), "attempt", m.SendAttempts+1, "err", err)
		fl := f.newFailure(l.name, m, err, now)
		if !fl.change.Event.Permanent {
			retryable++
		}
		br.fails = append(br.fails, fl)
	}
	if len(busy) > 0 {
		pause := l.pace.busy(began)
		f.log.Info("forward target busy; pausing its sends", "target", l.name, "pause", pause, "put_off", len(busy))
		for _, m := range busy {
			br.defers = append(br.defers, newThrottleRelease(m, m.LeaseToken, now, pause))
		}
		l.deferred.Add(float64(len(busy)))
	} else if !aborted {
		l.pace.went()
	}
	if aborted || (len(busy) > 0 && len(br.marks) == 0 && len(br.fails) == 0) {
		// Aborted, or only busy answers: the circuit learns nothing.
		l.br.release(pass)
	} else {
		cause := ""
		if len(br.fails) > 0 {
			cause = br.fails[0].change.Event.Err
		}
		f.settle(l, pass, len(br.marks) == 0 && retryable > 0, now, cause)
	}
	clear(recs) // drop references to payloads
	if capped {
		// Room for a bizID held by its max_in_flight: claim more of it now.
		select {
		case f.rescan <- struct{}{}:
		default:
		}
	}
	f.hand(l, br)
	return recs[:0]
}

// hand gives a worker's results to the recorder (which runs until the
// workers are gone), unless the forwarder is aborted.
func (f *Forwarder) hand(l *lane, br batchResult) {
	if len(br.marks) == 0 && len(br.fails) == 0 && len(br.defers) == 0 {
		return
	}
	select {
	case f.results <- br:
	case <-f.hardCtx.Done():
		if len(br.marks) > 0 {
			f.log.Warn("forwarder aborted: sent marks not recorded; these messages will be sent again after their lease",
				"target", l.name, "n", len(br.marks))
		}
	}
}

// interleaveBizIDs orders a fair claim's messages for the queue one bizID
// after the other, each bizID's in the order claimed (a key's order is
// within its bizID): a bizID with few messages due is queued at the front
// of the claim, not behind another's share of it.
func interleaveBizIDs(msgs []state.Message) []state.Message {
	var order []string
	byBiz := map[string][]state.Message{}
	for _, m := range msgs {
		if _, seen := byBiz[m.BizID]; !seen {
			order = append(order, m.BizID)
		}
		byBiz[m.BizID] = append(byBiz[m.BizID], m)
	}
	out := make([]state.Message, 0, len(msgs))
	for len(out) < len(msgs) {
		for _, id := range order {
			if q := byBiz[id]; len(q) > 0 {
				out = append(out, q[0])
				byBiz[id] = q[1:]
			}
		}
	}
	return out
}
