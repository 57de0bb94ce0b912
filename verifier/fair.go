package verifier

import (
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/internal/bizshare"
	"github.com/eventcenter/eventcenter/internal/fieldcheck"
	"github.com/eventcenter/eventcenter/store"
)

// Fair share between bizIDs (docs/checkback.md). Three parts:
//
//   - The claim is fair (store.Claim.FairCheckbacks): its limit is split
//     between the bizIDs with due check-backs by weight, so a bizID with a
//     backlog of older stale PREPAREs never fills it.
//   - The claim-ahead buffer is one queue per bizID, served in turn
//     (weighted round robin, Weight calls per turn), not oldest first.
//   - Each bizID is held to BizWorkers running calls, and to its weighted
//     share of Workers while others wait; and to its Rate, when set. A
//     bizID held back waits in its queue without spending an attempt;
//     what would wait long is put off (deferred, the attempt given back),
//     spaced at the pace the limit lets through, so a held bizID never
//     fills the buffer and the claims keep bringing the others'.

// Limits a bizID can be held back by (label limit of the metrics):
// limitEndpoint is its endpoints at their concurrency cap (see
// endpointRoom), the others are per-bizID limits.
const (
	limitRate     = "rate"
	limitWorkers  = "workers"
	limitEndpoint = "endpoint"
)

// rateHorizon is how far ahead a rate-limited bizID keeps check-backs
// waiting in memory; beyond it they are put off.
const rateHorizon = time.Second

// setFairness checks b's weight and rate limit (bizshare's rules, and a
// burst only with a rate) and records them.
func (r *resolved) setFairness(check *fieldcheck.Checker, field string, b BizConfig) {
	share := bizshare.Share{Weight: b.Weight, Rate: b.Rate, Burst: b.Burst}
	share.Check(check, field, "check-backs")
	if b.Burst > 0 && b.Rate == 0 {
		check.Bad(field+".Burst", "is set without %s.Rate", field)
	}
	r.weight = share.EffectiveWeight()
	r.rate, r.burst = b.Rate, b.Burst
	if r.rate > 0 {
		r.burst = share.EffectiveBurst()
	}
}

// bizState is what the verifier keeps per bizID: its limiter, and its
// running calls (counted by the workers, read by the run goroutine).
type bizState struct {
	id      string
	label   string // metric label: the bizID if configured, else "other"
	weight  int
	lim     *rate.Limiter // nil: no rate limit
	running atomic.Int64
	avg     atomic.Int64 // moving average of its call durations, ns
	// endpoints are the endpoints its messages were sent to lately, with
	// when, and trickleFrom when its trickle beyond their room last
	// started to fill (the run goroutine's; see fairClaim).
	endpoints   map[*gate]time.Time
	trickleFrom time.Time
}

// Endpoint room (fairClaim): a bizID whose messages were put off because
// their endpoint was at its cap is claimed no further than its endpoints
// have room for, as a held bizID is no further than it keeps. Otherwise
// each claim brings a backlog behind a slow endpoint anew, a lease and a
// put-off written per message, and the claims and writes of that churn
// are what the other bizIDs' check-backs wait behind. Beyond the room it
// still gets a trickle, at the pace its full endpoints' put-offs are
// spaced at: its messages to another endpoint, due behind the full one's
// backlog, come up through it.
const (
	// endpointMemory is how long an endpoint a bizID's message went to
	// counts towards its room.
	endpointMemory = time.Minute
	// maxEndpointsPerBiz bounds the endpoints kept per bizID; a bizID
	// with more is not capped by their room.
	maxEndpointsPerBiz = 32
)

// putOffAtFullEndpoint records that a message of b was put off because
// its endpoint was full: b is capped at its endpoints' room from the next
// claim (fairClaim), and shown held by limit "endpoint" until freed.
func (v *Verifier) putOffAtFullEndpoint(b *bizState) {
	v.m.bizThrottled.WithLabelValues(b.label, limitEndpoint).Inc()
	if _, ok := v.putOffFull[b.id]; ok {
		return
	}
	v.putOffFull[b.id] = b
	if v.endpointHeld[b.label]++; v.endpointHeld[b.label] == 1 {
		v.m.bizHeld.WithLabelValues(b.label, limitEndpoint).Set(1)
	}
}

// endpointFreed ends b's endpoint cap: one of its endpoints has a free
// call slot again (or b is forgotten).
func (v *Verifier) endpointFreed(b *bizState) {
	delete(v.putOffFull, b.id)
	b.trickleFrom = time.Time{}
	if v.endpointHeld[b.label]--; v.endpointHeld[b.label] <= 0 {
		delete(v.endpointHeld, b.label)
		v.m.bizHeld.WithLabelValues(b.label, limitEndpoint).Set(0)
	}
}

// sentTo records that a message of b went to endpoint g at now.
func (b *bizState) sentTo(g *gate, now time.Time) {
	if b.endpoints == nil {
		b.endpoints = map[*gate]time.Time{}
	}
	if _, ok := b.endpoints[g]; ok || len(b.endpoints) < maxEndpointsPerBiz {
		b.endpoints[g] = now
	}
}

// endpointRoom is how many more messages of b its endpoints of the last
// endpointMemory take now, summed; whether one of them has every call slot
// taken; and the trickle, in messages a second: the pace the full ones'
// put-offs are spaced at (none for one whose first calls are still young). ok is
// false when b is not to be capped by it (too many endpoints to know them
// all).
func (b *bizState) endpointRoom(now time.Time, minDelay time.Duration) (room int, full bool, trickle float64, ok bool) {
	if len(b.endpoints) >= maxEndpointsPerBiz {
		return 0, false, 0, false
	}
	for g, at := range b.endpoints {
		if now.Sub(at) > endpointMemory {
			delete(b.endpoints, g)
			continue
		}
		n, f, step := g.room(minDelay)
		room += n
		full = full || f
		if f && step > 0 {
			trickle += 1 / step.Seconds()
		}
	}
	return room, full, trickle, true
}

// observe feeds a call's duration into the moving average.
func (b *bizState) observe(d time.Duration) {
	old := b.avg.Load()
	if old == 0 {
		b.avg.Store(int64(d))
		return
	}
	b.avg.Store((4*old + int64(d)) / 5)
}

// bizQueue is one bizID's part of the claim-ahead buffer.
type bizQueue struct {
	st     *bizState
	jobs   []job
	head   int
	credit int // calls left in its current turn
	// held is the limit that held it back at the last drain ("" none).
	held string
	// shown and shownLen are what the gauges say of it.
	shown    string
	shownLen int
	// active is when it last had check-backs waiting or running (see
	// expireIdle).
	active time.Time
}

func (q *bizQueue) len() int { return len(q.jobs) - q.head }

func (q *bizQueue) pop() job {
	j := q.jobs[q.head]
	q.jobs[q.head] = job{}
	q.head++
	if q.head >= q.len() { // move the rest to the front now and then
		n := copy(q.jobs, q.jobs[q.head:])
		clear(q.jobs[n:])
		q.jobs, q.head = q.jobs[:n], 0
	}
	return j
}

// fairBuf is the claim-ahead buffer: a queue per bizID, served in turn.
// Only the run goroutine touches it.
type fairBuf struct {
	qs   map[string]*bizQueue
	ring []*bizQueue // the queues with jobs, in turn order
	next int
	n    int // jobs in all queues
	// heldN is the jobs in queues held back at the last drain: they do
	// not count against the claim-ahead room (see loop.ready).
	heldN int
}

func newFairBuf() *fairBuf { return &fairBuf{qs: map[string]*bizQueue{}} }

func (b *fairBuf) push(st *bizState, j job) {
	q := b.qs[st.id]
	if q == nil {
		q = &bizQueue{st: st}
		b.qs[st.id] = q
	}
	if q.len() == 0 {
		b.ring = append(b.ring, q)
	}
	q.jobs = append(q.jobs, j)
	b.n++
}

// all calls fn with every buffered job and empties the buffer.
func (b *fairBuf) all(fn func(j *job)) {
	for _, q := range b.ring {
		for i := q.head; i < len(q.jobs); i++ {
			fn(&q.jobs[i])
		}
		q.jobs, q.head = nil, 0
	}
	b.ring, b.next, b.n, b.heldN = nil, 0, 0, 0
}

// bizOf returns the state of a bizID, made at first sight. Only the run
// goroutine calls it.
func (v *Verifier) bizOf(bizID string, r *resolved) *bizState {
	if st, ok := v.bizStates[bizID]; ok {
		return st
	}
	st := &bizState{id: bizID, label: "other", weight: r.weight}
	if _, ok := v.cfg.BizIDs[bizID]; ok {
		st.label = bizID
	}
	if r.rate > 0 {
		st.lim = rate.NewLimiter(rate.Limit(r.rate), r.burst)
	}
	v.bizStates[bizID] = st
	return st
}

// fairClaim is the fairness a claim asks the store for. A bizID held back
// by its rate is capped at the room left in what it keeps (keep): more
// would only be put off again, a write each. A bizID held at its worker
// cap with enough waiting already is capped at 0; with less it is not
// capped (what waits for its workers costs nothing but memory).
//
// A bizID put off at a full endpoint since its endpoints last had a free
// call slot is capped at their room, less what waits in its queue, or at
// its trickle since the claim that last took it, if more (see
// endpointRoom).
func (v *Verifier) fairClaim(b *fairBuf, now time.Time) *store.Fair {
	f := &store.Fair{Weights: v.weights}
	capAt := func(id string, n int) {
		if f.Max == nil {
			f.Max = map[string]int{}
		}
		if m, ok := f.Max[id]; ok {
			n = min(n, m)
		}
		f.Max[id] = max(n, 0)
	}
	for id, q := range b.qs {
		if q.held == "" {
			continue
		}
		room := v.keep(q, q.held) - q.len()
		if room > 0 && q.held != limitRate {
			continue
		}
		capAt(id, room)
	}
	for id, st := range v.putOffFull {
		room, full, trickle, ok := st.endpointRoom(now, v.cfg.BusyDelay)
		if !ok || !full {
			v.endpointFreed(st)
			continue
		}
		if q := b.qs[id]; q != nil {
			room -= q.len()
		}
		if st.trickleFrom.IsZero() {
			st.trickleFrom = now
		}
		if t := min(int(now.Sub(st.trickleFrom).Seconds()*trickle), v.cfg.ClaimLimit); t > room {
			room, st.trickleFrom = t, now
		}
		capAt(id, room)
	}
	return f
}

// cappedBiz is a bizID the last claim capped, with what it had waiting
// once the claim was taken.
type cappedBiz struct {
	id      string
	waiting int
}

// uncapped says whether a bizID the last claim capped has used up half of
// what it had waiting then (or of what it keeps, if less), or is no
// longer held back: the next claim may bring it more. It forgets the
// capped bizIDs if so. Half, so that a held bizID is claimed in steps of
// at least half of what it keeps, not one claim per call that ends; and
// a claim that brought it nothing (none due) is followed by others only
// as its queue halves again, not at once.
func (v *Verifier) uncapped(l *loop) bool {
	for _, c := range l.capped {
		q := l.fb.qs[c.id]
		if q == nil || q.held == "" || 2*q.len() < min(c.waiting, v.keep(q, q.held)) {
			l.capped = l.capped[:0]
			return true
		}
	}
	return false
}

// keep is how many messages a bizID held back by limit keeps waiting in
// memory: what the limit lets through soon. With a rate, a second's worth
// and the burst; with the worker cap, two calls per worker it may use.
func (v *Verifier) keep(q *bizQueue, limit string) int {
	if limit == limitRate {
		return q.st.lim.Burst() + int(float64(q.st.lim.Limit())*rateHorizon.Seconds())
	}
	return 2 * max(1, int(q.st.running.Load()))
}

// workerCap is how many calls q's bizID may have running now: BizWorkers,
// and its weighted share of Workers among the bizIDs that wait or run
// (weight sum activeWeight).
func (v *Verifier) workerCap(q *bizQueue, activeWeight int) int {
	share := (v.cfg.Workers*q.st.weight + activeWeight - 1) / max(activeWeight, 1)
	return max(1, min(share, v.cfg.BizWorkers))
}

// drain hands buffered messages to free workers, bizID by bizID in turn
// (Weight each per turn), until every worker is busy or every bizID with
// messages is empty or held back by a limit. It returns when the next
// rate-limited bizID gets a token (zero for none).
func (v *Verifier) drain(l *loop) time.Duration {
	b := l.fb
	var wake time.Duration
	// The bizIDs that wait or run, for the worker shares.
	active := 0
	for _, q := range b.qs {
		if q.len() > 0 || q.st.running.Load() > 0 {
			active += q.st.weight
		}
	}
	progress := true
	for progress && b.n > 0 && l.ctx.Err() == nil {
		progress = false
		for k := 0; k < len(b.ring) && b.n > 0; {
			if b.next >= len(b.ring) {
				b.next = 0
			}
			q := b.ring[b.next]
			if q.len() == 0 {
				b.ring = append(b.ring[:b.next], b.ring[b.next+1:]...)
				continue
			}
			k++
			served, full, wait := v.serveTurn(l, b, q, active)
			if full {
				v.countHeld(b)
				return wake
			}
			if wait > 0 && (wake == 0 || wait < wake) {
				wake = wait
			}
			if served {
				progress = true
			}
			// Its turn is over: credit spent, held back or empty.
			q.credit = 0
			b.next++
		}
	}
	v.countHeld(b)
	return wake
}

// countHeld sets heldN, and the gauges of the queues whose state changed,
// after a drain.
func (v *Verifier) countHeld(b *fairBuf) {
	b.heldN = 0
	now := v.cfg.Now()
	for _, q := range b.qs {
		if q.len() == 0 {
			q.held = ""
		}
		if q.len() > 0 || q.st.running.Load() > 0 || q.active.IsZero() {
			q.active = now
		}
		if q.held != "" {
			b.heldN += q.len()
		}
		if q.held != q.shown {
			if q.shown != "" {
				v.m.bizHeld.WithLabelValues(q.st.label, q.shown).Set(0)
			}
			if q.held != "" {
				v.m.bizHeld.WithLabelValues(q.st.label, q.held).Set(1)
			}
			q.shown = q.held
		}
		if n := q.len(); n != q.shownLen {
			v.m.bizWaiting.WithLabelValues(q.st.label).Add(float64(n - q.shownLen))
			q.shownLen = n
		}
		v.view.show(q) // BizStatus (status.go)
	}
	v.expireIdle(b, now)
}

// bizIdle is how long a bizID the configuration does not name stays
// known with nothing waiting or running: its queue, its state (limiter,
// moving average) and its row in BizStatus are then dropped. A one-off
// bizID would otherwise stay for good. Its limiter's bucket would have
// refilled long before, so dropping it changes no decision.
const bizIdle = 10 * time.Minute

// expireIdle drops what is kept of bizIDs idle for bizIdle (countHeld
// notes when each was last active), looking at most once a minute. Only
// the run goroutine calls it.
func (v *Verifier) expireIdle(b *fairBuf, now time.Time) {
	if now.Sub(v.swept) < time.Minute {
		return
	}
	v.swept = now
	for id, q := range b.qs {
		if _, configured := v.cfg.BizIDs[id]; configured || now.Sub(q.active) < bizIdle || q.shownLen != 0 || q.shown != "" {
			continue
		}
		if st := v.putOffFull[id]; st != nil {
			v.endpointFreed(st)
		}
		delete(b.qs, id)
		delete(v.bizStates, id)
		v.view.forget(id)
	}
}

// serveTurn dispatches from q until its turn's credit is spent, a limit
// holds it back (held set; wait is when its rate lets the next call
// through), or no worker is free (full). served says whether any message
// left the buffer (called, queued at its endpoint, put off or given back).
func (v *Verifier) serveTurn(l *loop, b *fairBuf, q *bizQueue, active int) (served, full bool, wait time.Duration) {
	if q.credit == 0 {
		q.credit = q.st.weight
	}
	q.held = ""
	for q.credit > 0 && q.len() > 0 {
		if q.st.running.Load() >= int64(v.workerCap(q, active)) {
			// At its cap: its messages wait for its calls to end; they
			// do not count against the claim-ahead room, and the
			// claims skip it, so the others' keep coming.
			v.hold(b, q, limitWorkers, 0)
			return served, false, 0
		}
		var res *rate.Reservation
		if q.st.lim != nil {
			now := time.Now()
			res = q.st.lim.ReserveN(now, 1)
			if d := res.DelayFrom(now); d > 0 {
				res.CancelAt(now)
				v.hold(b, q, limitRate, d)
				return served, false, d
			}
		}
		j := q.jobs[q.head]
		switch v.dispatch(l, j) {
		case dispatchFull:
			if res != nil {
				res.Cancel()
			}
			return served, true, 0
		case dispatchCalled:
		default: // put off or given back: the token is not spent
			if res != nil {
				res.Cancel()
			}
		}
		served = true // it left the buffer: the drain made progress
		q.pop()
		b.n--
		q.credit--
	}
	return served, false, 0
}

// hold marks q held back by limit. Its head message is counted as
// throttled (once). With a rate, the messages beyond what the rate lets
// through soon (keep) are put off (deferred, no attempt spent), spaced at
// the rate from when it lets them through, so they come back at its
// pace instead of waiting in memory; with the worker cap they wait (the
// claims skip the bizID meanwhile: fairClaim).
func (v *Verifier) hold(b *fairBuf, q *bizQueue, limit string, wait time.Duration) {
	q.held = limit
	if head := &q.jobs[q.head]; !head.throttled {
		head.throttled = true
		v.m.bizThrottled.WithLabelValues(q.st.label, limit).Inc()
	}
	if limit != limitRate {
		return
	}
	keep := v.keep(q, limit)
	pace := max(time.Duration(float64(time.Second)/float64(q.st.lim.Limit())), time.Millisecond)
	now := v.cfg.Now()
	for i := 0; q.len() > keep; i++ {
		j := q.jobs[len(q.jobs)-1]
		q.jobs[len(q.jobs)-1] = job{}
		q.jobs = q.jobs[:len(q.jobs)-1]
		b.n--
		at := min(wait+time.Duration(keep+i)*pace, v.cfg.MaxPutOff) + time.Duration(v.cfg.Rand()*float64(pace))
		if !j.throttled {
			v.m.bizThrottled.WithLabelValues(q.st.label, limit).Inc()
		}
		v.deferMsg(&j, now.Add(at), fmt.Sprintf("bizID %q over its check-back rate limit", q.st.id))
	}
}

// fairMetrics are the per-bizID fairness metrics.
type fairMetrics struct {
	bizThrottled *prometheus.CounterVec
	bizHeld      *prometheus.GaugeVec
	bizWaiting   *prometheus.GaugeVec
}

func newFairMetrics() fairMetrics {
	return fairMetrics{
		bizThrottled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_checkback_throttled_total",
			Help: "Check-backs that waited, or were put off (no attempt spent), because their bizID was held back: limit=\"rate\" (checkback.biz[].rate), \"workers\" (its share of checkback.workers) or \"endpoint\" (put off at an endpoint at checkback.endpoint_concurrency with its wait queue full). biz_id is \"other\" for bizIDs not configured.",
		}, []string{"biz_id", "limit"}),
		bizHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventcenter_checkback_biz_throttled",
			Help: "1 while a bizID's check-backs wait because of a per-bizID limit (rate or workers), or while its claims are capped at the room of its full endpoints (endpoint), else 0.",
		}, []string{"biz_id", "limit"}),
		bizWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventcenter_checkback_biz_waiting",
			Help: "Claimed check-backs of a bizID waiting in memory for a worker or a limit.",
		}, []string{"biz_id"}),
	}
}

// touch makes the series of every configured bizID and of "other" exist
// from the start, so dashboards and alerts see zeros rather than nothing.
func (f fairMetrics) touch(bizIDs map[string]BizConfig) {
	labels := []string{"other"}
	for id := range bizIDs {
		labels = append(labels, id)
	}
	for _, l := range labels {
		for _, lim := range []string{limitRate, limitWorkers, limitEndpoint} {
			f.bizThrottled.WithLabelValues(l, lim)
			f.bizHeld.WithLabelValues(l, lim)
		}
		f.bizWaiting.WithLabelValues(l)
	}
}

func (f fairMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{f.bizThrottled, f.bizHeld, f.bizWaiting}
}
