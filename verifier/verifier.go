package verifier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/internal/breaker"
	"github.com/eventcenter/eventcenter/internal/startstop"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/tracing"
	"github.com/eventcenter/eventcenter/verifier/resolver"
)

// Store is what the verifier needs from the store. Its Apply should be the
// forwarder's fast path (forwarder.Applier, forwarder.FastPath) so that
// messages a commit answer makes sendable are leased and forwarded at once;
// it is called from the verifier's applier goroutines, possibly several at
// once (Config.Appliers), and must not block for long after the commit.
type Store interface {
	ClaimCheckbacks(ctx context.Context, c store.Claim) ([]state.Message, error)
	Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error)
}

// Owned is the set of owned control partitions (ingest.Ownership).
type Owned interface {
	Partitions() []int32
	Changed() <-chan struct{}
}

// Verifier checks back stale PREPAREs in the owned partitions.
type Verifier struct {
	cfg    Config
	biz    map[string]*resolved
	st     Store
	owned  Owned
	caller *caller
	gates  *gates
	m      *metrics
	log    *slog.Logger

	slots   chan struct{} // one per running call (Config.Workers)
	freed   chan struct{} // a call finished
	results chan result
	// parsed caches the endpoints PREPAREs name (the run goroutine's).
	parsed map[string]parsed
	// workersStarted counts worker goroutines started (at most Workers
	// per run of the loop).
	workersStarted atomic.Int64
	// bizStates holds each bizID's limiter and running calls (the run
	// goroutine's map; see fair.go); weights are the configured weights
	// for the fair claim.
	bizStates map[string]*bizState
	weights   map[string]int
	// putOffFull are the bizIDs with a message put off at a full
	// endpoint, which the claims cap at their endpoints' room (the run
	// goroutine's; see fairClaim).
	putOffFull map[string]*bizState
	// endpointHeld counts the bizIDs in putOffFull by metric label.
	endpointHeld map[string]int
	// swept is when expireIdle last looked (the run goroutine's).
	swept time.Time
	// view is what BizStatus shows of the queues (status.go).
	view bizView
	// registries are the registries (first servers) the allow lists
	// name: the registry label values of the metrics.
	registries map[string]struct{}
	// hints are the due times DueAt was told of (due.go).
	hints *dueHints

	// Base gives Stop and the shared start/stop semantics.
	startstop.Base
}

// result is one change for the applier, with what it needs to report.
type result struct {
	change store.Change
	proto  checkback.Protocol
	// leaseEnd is when the claim's lease runs out (it began no earlier
	// than the claim was taken): a write the store refused is tried
	// again until then, and given up after (the message is checked
	// again by whoever claims it next).
	leaseEnd time.Time
}

// New builds a Verifier. With a plain store (no fast path) committed
// messages are left due for the forwarder's scan.
func New(cfg Config, st Store, owned Owned) (*Verifier, error) {
	if st == nil {
		return nil, errors.New("verifier: nil Store")
	}
	if owned == nil {
		return nil, errors.New("verifier: nil Owned")
	}
	cfg.setDefaults()
	biz, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	m.touch(cfg.BizIDs)
	rt := cfg.Transport
	if rt == nil {
		rt = newTransport(cfg.EndpointConcurrency)
	}
	v := &Verifier{
		cfg: cfg, biz: biz, st: st, owned: owned,
		caller: newCaller(rt, cfg.Now, cfg.Logger),
		gates: &gates{m: map[string]*gate{}, cap: cfg.EndpointConcurrency, queueCap: cfg.EndpointQueue, failures: cfg.BreakerFailures,
			coolDown: cfg.BreakerCoolDown, metrics: m, log: cfg.Logger},
		m:       m,
		log:     cfg.Logger,
		slots:   make(chan struct{}, cfg.Workers),
		freed:   make(chan struct{}, 1),
		results: make(chan result, 2*cfg.ApplyBatch),
		parsed:  map[string]parsed{},

		bizStates:    map[string]*bizState{},
		putOffFull:   map[string]*bizState{},
		endpointHeld: map[string]int{},
		weights:      map[string]int{},

		registries: map[string]struct{}{},
		hints:      newDueHints(),
	}
	for _, r := range biz {
		for _, rule := range r.allow {
			if rule.scheme == "zookeeper" {
				v.registries[rule.host] = struct{}{}
			}
		}
	}
	m.touchRegistries(v.registries)
	for id, r := range biz {
		if id != "" && r.weight > 1 {
			v.weights[id] = r.weight
		}
	}
	return v, nil
}

// Config returns the effective configuration (defaults applied).
func (v *Verifier) Config() *Config { return &v.cfg }

// Start runs the verifier until Stop or until ctx ends; it returns at once.
// Stop (startstop.Base's) stops claiming, waits for a claim in flight,
// cancels the calls in flight (their attempts stay counted, as the
// producer may have seen them; they are checked again after their
// backoff), gives the claimed messages not called yet back (due at once,
// no attempt burned), writes the answers
// already received and waits for every goroutine. When Stop's ctx ends
// first, pending writes are abandoned (those messages are checked again
// when their lease runs out) and Stop returns ctx's error once the
// goroutines are gone.
func (v *Verifier) Start(ctx context.Context) error {
	return v.StartFunc(ctx, func(r startstop.Run) (func() error, error) {
		return func() error {
			v.run(r.Ctx, r.Work)
			if r.Work.Err() != nil {
				return fmt.Errorf("stop verifier: %w", context.Cause(r.Work))
			}
			return nil
		}, nil
	})
}

// claimed is what a claim brought back to the run loop.
type claimed struct {
	msgs  []state.Message
	limit int
	err   error
	at    time.Time // taken before the claim: its lease began no earlier
}

// loop is the state of the run goroutine: the claim-ahead buffer and what
// decides the next claim. Only the run goroutine touches it.
type loop struct {
	ctx context.Context
	// claimCtx is the claims' context: Stop does not cancel it (only the
	// end of Stop's context does), so a claim in flight when Stop comes
	// returns what it leased, and that is given back. Cancelled, a claim
	// whose statement had already committed on the server returned an
	// error instead, and its messages stayed leased for the whole lease.
	claimCtx context.Context
	calls    sync.WaitGroup // dispatched calls not finished yet
	// work feeds the worker goroutines (at most Config.Workers, started
	// as concurrency first needs them, kept until the loop stops: a
	// goroutine per call grew a fresh stack for every call).
	work     chan task
	workers  sync.WaitGroup
	spawned  int
	claims   sync.WaitGroup // the claim goroutine, at most one at a time
	claimed  chan claimed
	claiming bool
	fb       *fairBuf // claimed messages waiting for a worker, a queue per bizID
	more     bool     // the last claim was full: more may be due
	busy     bool     // an endpoint was at its cap since the last claim
	freed    bool     // a worker freed since the last claim
	due      bool     // a poll is due (PollInterval passed, or ownership changed)
	// capped are the bizIDs the last claim capped (fairClaim: held back
	// by a limit), with what each had waiting once the claim was taken.
	// The claim may have come back short for them alone, so once one
	// has used up half of that, more of its check-backs may be due, as
	// after a full claim (unskipped).
	capped []cappedBiz
	// changed is closed at the first ownership change after the last
	// claim read the partitions (nil once it fired, until the next claim
	// takes a new one): a change is never lost to another ready case.
	changed <-chan struct{}
	last    time.Time
	// dues are the told due times still ahead (DueAt); its timer makes a
	// claim due at the earliest.
	dues *dueTimes
}

func (v *Verifier) run(ctx, applyCtx context.Context) {
	applied := v.startAppliers(applyCtx)
	l := &loop{ctx: ctx, claimCtx: applyCtx, claimed: make(chan claimed, 1), due: true, changed: v.owned.Changed(), fb: newFairBuf(), dues: newDueTimes(),
		// Never full: a task is sent only with a slot taken, and there
		// are as many slots as room here.
		work: make(chan task, cap(v.slots))}
	// After a wake-up by a call that ended, claims are at least this far
	// apart, so a busy endpoint does not turn into a claim per answer.
	minGap := min(v.cfg.PollInterval, 2*time.Millisecond)
	poll := time.NewTimer(v.cfg.PollInterval)
	defer poll.Stop()
	defer l.dues.stop()
	gap := time.NewTimer(time.Hour)
	gap.Stop()
	defer gap.Stop()
	// limited wakes the loop when a rate-limited bizID gets its next token.
	limited := time.NewTimer(time.Hour)
	limited.Stop()
	defer limited.Stop()
	for {
		if wake := v.drain(l); wake > 0 {
			limited.Reset(wake)
		}
		if !l.claiming && !l.more && v.uncapped(l) {
			l.more = true
		}
		if !l.claiming && l.ready() <= v.cfg.ClaimAhead/2 && l.fb.n < 2*v.cfg.ClaimAhead {
			wantGap := !l.more && !l.due && l.busy && l.freed
			switch {
			case l.more || l.due:
				v.claim(l)
			case wantGap && time.Since(l.last) >= minGap:
				v.claim(l)
			case wantGap:
				gap.Reset(minGap - time.Since(l.last))
			}
			if l.claiming {
				poll.Reset(v.cfg.PollInterval)
			}
		}
		select {
		case <-ctx.Done():
		case c := <-l.claimed:
			l.claiming = false
			v.take(l, c)
		case <-v.freed:
			l.freed = true
		case <-l.changed:
			l.due, l.changed = true, nil
		case <-poll.C:
			l.due = true
		case <-v.hints.added:
			if l.dues.add(v.hints.take(), v.cfg.Now()) {
				l.due = true
			}
		case <-l.dues.timer.C:
			l.due = true
		case <-gap.C:
		case <-limited.C:
		}
		if ctx.Err() != nil {
			break
		}
	}
	// Stopping: a claim in flight is waited for (it runs on claimCtx);
	// what it and earlier claims leased but did not call is given back,
	// due at once for whoever owns it next.
	l.claims.Wait()
	select {
	case c := <-l.claimed:
		v.take(l, c)
	default:
	}
	l.fb.all(func(j *job) { v.giveBack(j, "verifier stopping") })
	l.calls.Wait()
	close(l.work)
	l.workers.Wait()
	close(v.results)
	<-applied
	v.caller.closeIdle()
}

// claim starts a claim of up to ClaimLimit due check-backs, no more than
// the free workers plus the free room of the claim-ahead buffer. The claim
// runs on its own goroutine so that calls keep being started from the
// buffer while it is a round trip away.
func (v *Verifier) claim(l *loop) {
	// Taken before the partitions are read: a change after the read
	// makes the next claim due.
	l.changed = v.owned.Changed()
	parts := v.owned.Partitions()
	l.due, l.busy, l.freed, l.more = false, false, false, false
	if len(parts) == 0 {
		return
	}
	free := cap(v.slots) - len(v.slots) // only this goroutine takes slots: a lower bound
	limit := min(v.cfg.ClaimLimit, free+v.cfg.ClaimAhead-l.ready())
	if limit <= 0 {
		return
	}
	l.claiming, l.last = true, time.Now()
	l.dues.claimed(v.cfg.Now())
	l.claims.Add(1)
	fair := v.fairClaim(l.fb, v.cfg.Now())
	l.capped = l.capped[:0]
	for id := range fair.Max {
		// Only the held: one capped at its endpoints' room is claimed
		// again as calls end and the claims follow (uncapped would
		// claim again at once, as it has nothing waiting here).
		if q := l.fb.qs[id]; q != nil && q.held != "" {
			l.capped = append(l.capped, cappedBiz{id: id})
		}
	}
	go func() {
		defer l.claims.Done()
		at := v.cfg.Now()
		msgs, err := v.st.ClaimCheckbacks(l.claimCtx, store.Claim{Partitions: parts, Limit: limit, Lease: v.cfg.Lease, FairCheckbacks: fair})
		l.claimed <- claimed{msgs: msgs, limit: limit, err: err, at: at}
	}()
}

// take handles what a claim brought: messages that cannot be called are
// parked at once, the others join the claim-ahead buffer.
func (v *Verifier) take(l *loop, c claimed) {
	if c.err != nil {
		if l.ctx.Err() == nil {
			v.log.Error("claim check-backs", "err", c.err)
		}
		return
	}
	l.more = len(c.msgs) == c.limit
	now := v.cfg.Now()
	for i := range c.msgs {
		m := &c.msgs[i]
		r := v.bizConf(m.BizID)
		ep, reason, disallowed := v.endpointFor(m, r)
		if reason != "" {
			v.m.total.WithLabelValues(ep.Protocol.String(), outcomeParked).Inc()
			if disallowed {
				v.m.disallowed.Inc()
			}
			v.log.Warn("check-back not called; message parked as VERIFY_FAILED",
				"biz_id", m.BizID, "key", m.Key, "reason", reason)
			v.emit(m, c.at, ep.Protocol, state.Event{Kind: state.KindCheckParked, At: now, Err: reason})
			continue
		}
		if limit := r.policy.MaxAttempts; m.VerifyAttempts > limit {
			// The claim counted an attempt beyond the limit: the last
			// allowed call was never answered (its center stopped during
			// it). No call; parked as VERIFY_FAILED with the limit recorded.
			v.m.total.WithLabelValues(ep.Protocol.String(), outcomeParked).Inc()
			v.emit(m, c.at, ep.Protocol, state.Event{Kind: state.KindCheckUnknown, At: now, MaxAttempts: limit,
				Err: fmt.Sprintf("check-back %d via %s was never answered (its center stopped during the call); last error: %s",
					limit, ep, m.LastError)})
			continue
		}
		// The body is not needed to check back: do not hold it while the
		// message waits (only the trace context the call carries).
		m.Payload, m.Headers = nil, tracing.TraceHeaders(m.Headers)
		st := v.bizOf(m.BizID, r)
		l.fb.push(st, job{m: *m, ep: ep, name: v.name(ep), r: r, biz: st, claimedAt: c.at})
	}
	for i := range l.capped {
		if q := l.fb.qs[l.capped[i].id]; q != nil {
			l.capped[i].waiting = q.len()
		}
	}
}

// ready is the number of messages in the claim-ahead buffer that no
// per-bizID limit holds back: the claims keep the buffer filled with
// these, so a held bizID's messages never keep the others' out.
func (l *loop) ready() int { return l.fb.n - l.fb.heldN }

// What dispatch did with a job.
type dispatched uint8

const (
	dispatchFull   dispatched = iota // no worker free: j stays in the buffer
	dispatchCalled                   // j runs or waits at its endpoint for a call of it
	dispatchPutOff                   // j was put off or given back
)

// dispatch puts off, queues or starts the call of j.
func (v *Verifier) dispatch(l *loop, j job) dispatched {
	now := v.cfg.Now()
	if waited := now.Sub(j.claimedAt); waited > v.cfg.Lease-j.r.policy.Timeout-attemptBudget(j.ep, j.r.policy.Timeout) {
		// Its lease may run out before an answer is written: give it
		// back to the next claim.
		v.giveBack(&j, fmt.Sprintf("waited %s for a worker", waited))
		return dispatchPutOff
	}
	g := v.gates.get(gateKey(j.ep))
	if at, why, hold := v.breakerHold(g, &j, now); hold {
		v.deferMsg(&j, at, why)
		return dispatchPutOff
	}
	select {
	case v.slots <- struct{}{}: // only this goroutine takes slots
	default:
		return dispatchFull // every worker is busy: j waits in the buffer
	}
	j.biz.sentTo(g, now)
	run, queued := g.admit(j)
	if !run {
		<-v.slots
		l.busy = true
		if !queued {
			v.putOffAtFullEndpoint(j.biz)
			v.deferMsg(&j, g.putOff(now, v.cfg.BusyDelay, v.cfg.MaxPutOff, v.cfg.Rand()), fmt.Sprintf("endpoint %s at its concurrency cap", j.ep.Host))
			return dispatchPutOff
		}
		// queued: a call of this endpoint that ends takes it.
		return dispatchCalled
	}
	j.biz.running.Add(1)
	l.calls.Add(1)
	l.work <- task{ctx: l.ctx, j: j, g: g, calls: &l.calls}
	if l.spawned < len(v.slots) {
		l.spawned++
		v.workersStarted.Add(1)
		l.workers.Add(1)
		go func() {
			defer l.workers.Done()
			for t := range l.work {
				v.serve(t)
			}
		}()
	}
	return dispatchCalled
}

// task is a dispatched call for a worker: j, then the calls queued behind
// it at its endpoint's gate.
type task struct {
	ctx   context.Context
	j     job
	g     *gate
	calls *sync.WaitGroup
}

// serve runs a task's calls and then frees its slot.
func (v *Verifier) serve(t task) {
	ctx, j, g := t.ctx, t.j, t.g
	defer t.calls.Done()
	defer func() {
		<-v.slots
		select {
		case v.freed <- struct{}{}:
		default:
		}
	}()
	// The first job's call was counted running by dispatch; those taken
	// from the gate's queue are counted here.
	for ok, first := true, true; ok; first = false {
		if !first {
			j.biz.running.Add(1)
		}
		v.serveOne(ctx, &j, g)
		j.biz.running.Add(-1)
		j, ok = g.next()
	}
}

// serveOne runs the call of j (a dispatched job or one its endpoint's
// gate queued), or puts it off.
func (v *Verifier) serveOne(ctx context.Context, j *job, g *gate) {
	if ctx.Err() != nil {
		v.giveBack(j, "verifier stopping")
		return
	}
	now := v.cfg.Now()
	if waited := now.Sub(j.claimedAt); waited > v.cfg.Lease-j.r.policy.Timeout-attemptBudget(j.ep, j.r.policy.Timeout) {
		// Its lease may run out before an answer is written: give it
		// back to the next claim.
		v.giveBack(j, fmt.Sprintf("waited %s for its endpoint", waited))
		return
	}
	if at, why, hold := v.breakerHold(g, j, now); hold {
		v.deferMsg(j, at, why)
		return
	}
	done, err := g.breaker.Allow()
	if err != nil {
		v.deferMsg(j, v.afterCoolDown(v.cfg.Now()), fmt.Sprintf("endpoint %s circuit open", j.ep.Host))
		return
	}
	v.check(ctx, j, g, done)
}

// bizConf returns a bizID's effective configuration.
func (v *Verifier) bizConf(bizID string) *resolved {
	if r, ok := v.biz[bizID]; ok {
		return r
	}
	return v.biz[""]
}

// endpointFor picks and checks the endpoint of m; reason is set when the
// message must be parked instead.
func (v *Verifier) endpointFor(m *state.Message, r *resolved) (ep checkback.Endpoint, reason string, disallowed bool) {
	switch {
	case r.endpoint != nil && (r.force || m.Verify == ""):
		return *r.endpoint, "", false
	case m.Verify == "":
		return checkback.Endpoint{}, fmt.Sprintf("no check-back endpoint: the PREPARE named none and bizID %q has no configured endpoint", m.BizID), false
	}
	ep, err := v.parse(m.Verify)
	if err != nil {
		return checkback.Endpoint{}, err.Error(), false
	}
	if r.endpoint != nil && r.endpoint.Origin() == ep.Origin() && r.endpoint.Path == ep.Path {
		return ep, "", false
	}
	if ep.Protocol == checkback.ProtoRegistry {
		if registryAllowed(r.allow, ep) {
			return ep, "", false
		}
		return ep, fmt.Sprintf("check-back registry %s (servers %s) is not allowed for bizID %q: add zookeeper://%s (and each backup server) to that bizID's allow list, with the origins of its providers, then retry the message",
			ep, strings.Join(ep.Registry, ","), m.BizID, ep.Host), true
	}
	for _, rule := range r.allow {
		if rule.allows(ep) {
			return ep, "", false
		}
	}
	return ep, fmt.Sprintf("check-back endpoint %s is not allowed for bizID %q: add its origin (%s) or a prefix to that bizID's allow list, then retry the message",
		ep, m.BizID, ep.Origin()), true
}

// parsed is a PREPARE's endpoint as parsed once, and its name for
// metrics and logs (Endpoint.String parses the URL again to redact it).
type parsed struct {
	ep   checkback.Endpoint
	name string
	err  error
}

// maxParsed bounds the cache of parsed endpoints; when full it starts
// over.
const maxParsed = 4096

// parse returns the parsed endpoint of raw, from the cache when it was
// seen before (most messages name the same few). Only the run goroutine
// calls it.
func (v *Verifier) parse(raw string) (checkback.Endpoint, error) {
	if p, ok := v.parsed[raw]; ok {
		return p.ep, p.err
	}
	ep, err := checkback.ParseEndpoint(raw)
	if len(v.parsed) >= maxParsed {
		clear(v.parsed)
	}
	v.parsed[raw] = parsed{ep: ep, name: ep.String(), err: err}
	return ep, err
}

// name is ep.String(), from the cache when ep was parsed by parse. Only
// the run goroutine calls it.
func (v *Verifier) name(ep checkback.Endpoint) string {
	if p, ok := v.parsed[ep.Raw]; ok && p.err == nil {
		return p.name
	}
	n := ep.String()
	if len(v.parsed) < maxParsed {
		v.parsed[ep.Raw] = parsed{ep: ep, name: n}
	}
	return n
}

// breakerHold tells whether j must not be called now because of its
// endpoint's circuit, and if so when to try it again and why: while the
// circuit is open, after the cool-down; while it is half-open and j was
// called before (it failed: its claim counted a second attempt or more),
// after the probe grace (gate.holdForProbe), so the probe goes to a
// message never called before when there is one.
func (v *Verifier) breakerHold(g *gate, j *job, now time.Time) (time.Time, string, bool) {
	switch g.breaker.State() { // never with g.mu held: may call OnStateChange
	case breaker.StateOpen:
		return v.afterCoolDown(now), fmt.Sprintf("endpoint %s circuit open", j.ep.Host), true
	case breaker.StateHalfOpen:
		if j.m.VerifyAttempts <= 1 {
			return time.Time{}, "", false
		}
		if left, hold := g.holdForProbe(time.Now()); hold {
			at := now.Add(left + time.Duration(v.cfg.Rand()*float64(v.cfg.BreakerCoolDown/4)))
			return at, fmt.Sprintf("endpoint %s circuit half-open: its probe is kept for a message not called before", j.ep.Host), true
		}
	}
	return time.Time{}, "", false
}

// giveBack returns a claimed message that was not called to the store,
// due at once and with the attempt its claim counted given back.
func (v *Verifier) giveBack(j *job, why string) {
	v.deferMsg(j, v.cfg.Now(), why)
}

// afterCoolDown is when a message of an open circuit is tried again: after
// the cool-down, spread over half of it more so that the messages of an
// endpoint do not all come back at once.
func (v *Verifier) afterCoolDown(now time.Time) time.Time {
	return now.Add(v.cfg.BreakerCoolDown + time.Duration(v.cfg.Rand()*float64(v.cfg.BreakerCoolDown/2)))
}

func (v *Verifier) deferMsg(j *job, at time.Time, why string) {
	m := &j.m
	v.m.total.WithLabelValues(j.ep.Protocol.String(), outcomeDeferred).Inc()
	v.log.Debug("check-back deferred", "biz_id", m.BizID, "key", m.Key, "reason", why, "retry_at", at)
	v.emit(m, j.claimedAt, j.ep.Protocol, state.Event{Kind: state.KindCheckDeferred, At: v.cfg.Now(), RetryAt: at, Err: why})
}

// check runs one call and queues its result. The claim counted the
// attempt (m.VerifyAttempts is its number); the result applies without
// counting again.
func (v *Verifier) check(ctx context.Context, j *job, g *gate, done func(error)) {
	m, ep, r := &j.m, j.ep, j.r
	n := max(m.VerifyAttempts, 1)
	ctx, endSpan := v.checkSpan(ctx, m, ep, n)
	id := g.begin()
	var a answer
	if ep.Protocol == checkback.ProtoRegistry {
		var park string
		if a, park = v.viaRegistry(ctx, j, n); park != "" {
			g.finish(id)
			endSpan(answer{Err: errors.New(park)})
			done(nil)
			v.m.total.WithLabelValues(ep.Protocol.String(), outcomeParked).Inc()
			v.m.registryTotal.WithLabelValues(v.registryLabel(ep), outcomeParked).Inc()
			v.m.disallowed.Inc()
			v.log.Warn("check-back not called; message parked as VERIFY_FAILED", "biz_id", m.BizID, "key", m.Key, "reason", park)
			v.emit(m, j.claimedAt, ep.Protocol, state.Event{Kind: state.KindCheckParked, At: v.cfg.Now(), Err: park})
			return
		}
	} else {
		a = v.caller.do(ctx, call{ep: ep, bizID: m.BizID, key: m.Key, attempt: n,
			timeout: r.policy.Timeout, secret: r.currentSecret(), signV1: r.signV1})
	}
	took := g.finish(id)
	j.biz.observe(took)
	endSpan(a)
	if ctx.Err() != nil {
		// Cut short by Stop: the breaker ignores it; the attempt stays
		// counted (the producer may have seen the call), like an unknown
		// answer.
		done(errShutdown)
		a = answer{Err: errors.New("cut short: the verifier was stopping")}
	} else {
		done(faultOf(m.MessageID(), a.Err))
		v.m.duration.WithLabelValues(ep.Protocol.String()).Observe(took.Seconds())
	}
	now := v.cfg.Now()
	ev := state.Event{At: now}
	outcome := ""
	switch {
	case a.Err == nil && a.Decision == checkback.DecisionCommit:
		ev.Kind, outcome = state.KindCheckCommit, outcomeCommit
	case a.Err == nil && a.Decision == checkback.DecisionRollback:
		ev.Kind, outcome = state.KindCheckRollback, outcomeRollback
	default:
		ev.Kind = state.KindCheckUnknown
		ev.MaxAttempts = r.policy.MaxAttempts
		ev.RetryAt = now.Add(r.policy.Backoff(n, v.cfg.Rand()))
		if a.Err != nil {
			outcome = outcomeError
			ev.Err = fmt.Sprintf("check-back %d via %s: %v", n, ep, a.Err)
		} else {
			outcome = outcomeUnknown
			ev.Err = fmt.Sprintf("check-back %d via %s: producer answered unknown", n, ep)
		}
	}
	v.m.total.WithLabelValues(ep.Protocol.String(), outcome).Inc()
	if ep.Protocol == checkback.ProtoRegistry {
		ro := outcome
		if errors.Is(a.Err, resolver.ErrNoProvider) {
			ro = outcomeNoProvider
		}
		v.m.registryTotal.WithLabelValues(v.registryLabel(ep), ro).Inc()
	}
	if v.cfg.OnOutcome != nil {
		v.cfg.OnOutcome(j.name, outcome)
	}
	v.emit(m, j.claimedAt, ep.Protocol, ev)
}

// emit queues a result of a claim taken at claimedAt for the appliers.
func (v *Verifier) emit(m *state.Message, claimedAt time.Time, p checkback.Protocol, ev state.Event) {
	v.results <- result{
		change:   store.Change{BizID: m.BizID, Key: m.Key, Partition: m.Partition, Event: ev, LeaseToken: m.LeaseToken},
		proto:    p,
		leaseEnd: claimedAt.Add(v.cfg.Lease),
	}
}

// startAppliers starts the goroutine that gathers results into batches and
// Appliers goroutines that write them; the returned channel closes when
// they have written everything sent before v.results closed.
func (v *Verifier) startAppliers(ctx context.Context) <-chan struct{} {
	batches := make(chan []result)
	var wg sync.WaitGroup
	for range v.cfg.Appliers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				v.apply(ctx, b)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		v.gather(batches)
		close(batches)
		wg.Wait()
	}()
	return done
}

// gather collects results into batches until the results channel closes,
// and hands each batch to the first free applier once it is full or
// ApplyInterval has passed since the last hand-over. While every applier
// is busy the batch keeps growing up to ApplyBatch, so batches are as
// large as the store's pace makes them.
func (v *Verifier) gather(batches chan<- []result) {
	tick := time.NewTicker(v.cfg.ApplyInterval)
	defer tick.Stop()
	var batch []result
	in := v.results
	ripe := false
	for {
		full := len(batch) >= v.cfg.ApplyBatch
		if in == nil && len(batch) == 0 {
			return
		}
		var out chan<- []result
		if len(batch) > 0 && (ripe || full || in == nil) {
			out = batches
		}
		recv := in
		if full {
			recv = nil
		}
		select {
		case r, ok := <-recv:
			if !ok {
				in = nil
				continue
			}
			if batch == nil {
				batch = make([]result, 0, v.cfg.ApplyBatch)
			}
			batch = append(batch, r)
		case out <- batch:
			batch, ripe = nil, false
		case <-tick.C:
			ripe = true
		}
	}
}

// Backoff between writes of a batch of answers the store refused: the
// first wait, doubled after each refusal up to the cap, each jittered.
const (
	applyRetryFirst = 50 * time.Millisecond
	applyRetryMax   = 2 * time.Second
)

// apply writes a batch of results. A write the store refuses (a lost
// connection, a failover, a locked database) is tried again with backoff
// while the results' leases last, so an answer survives a short store
// outage instead of waiting out the lease to be asked again; a result
// whose lease ran out is given up (whoever claims the message next checks
// it again, and the lease token fences a late write as before). ctx's
// end (Stop's context) abandons the batch.
func (v *Verifier) apply(ctx context.Context, batch []result) {
	wait := applyRetryFirst
	for try := 1; ; try++ {
		changes := make([]store.Change, len(batch))
		for i, r := range batch {
			changes[i] = r.change
		}
		res, err := v.st.Apply(ctx, store.ApplyRequest{Changes: changes})
		if err == nil {
			v.report(changes, res)
			return
		}
		v.m.applyErrors.Inc()
		if ctx.Err() != nil {
			v.m.applyAbandoned.Add(float64(len(batch)))
			v.log.Error("apply check-back results; stopped before the store took them, the messages are checked again after their lease",
				"n", len(batch), "tries", try, "err", err)
			return
		}
		d := wait/2 + time.Duration(v.cfg.Rand()*float64(wait/2))
		wait = min(2*wait, applyRetryMax)
		// Kept: the results whose lease outlasts the wait (the write
		// must land while the lease holds to spare a second call).
		at := v.cfg.Now().Add(d)
		kept := batch[:0]
		for _, r := range batch {
			if r.leaseEnd.After(at) {
				kept = append(kept, r)
			}
		}
		if dropped := len(batch) - len(kept); dropped > 0 {
			v.m.applyAbandoned.Add(float64(dropped))
			v.log.Error("apply check-back results; their lease ran out before the store took them, the messages are checked again",
				"n", dropped, "tries", try, "err", err)
		}
		batch = kept
		if len(batch) == 0 {
			return
		}
		v.log.Warn("apply check-back results; writing them again", "n", len(batch), "tries", try, "retry_in", d, "err", err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			v.m.applyAbandoned.Add(float64(len(batch)))
			v.log.Error("apply check-back results; stopped before the store took them, the messages are checked again after their lease",
				"n", len(batch), "tries", try, "err", err)
			return
		case <-t.C:
		}
	}
}

// report logs and counts what the store did with each written result.
func (v *Verifier) report(changes []store.Change, res store.ApplyResult) {
	for i, out := range res.Outcomes {
		if i >= len(changes) {
			break
		}
		c := changes[i]
		switch {
		case out.Err != nil:
			v.log.Error("apply check-back result", "biz_id", c.BizID, "key", c.Key, "err", out.Err)
		case out.Stale:
			v.log.Debug("check-back result dropped: lease taken over", "biz_id", c.BizID, "key", c.Key)
		case out.Parked && c.Event.Kind == state.KindCheckUnknown:
			label := "other"
			if _, ok := v.cfg.BizIDs[c.BizID]; ok {
				label = c.BizID
			}
			v.m.verifyFailed.WithLabelValues(label).Inc()
			v.log.Error("check-backs exhausted; message parked as VERIFY_FAILED (resolve it or retry it)",
				"biz_id", c.BizID, "key", c.Key, "attempts", c.Event.MaxAttempts, "last_error", c.Event.Err)
		case out.Effect == state.Conflict:
			v.log.Warn("check-back answer contradicts the recorded decision; kept the first",
				"biz_id", c.BizID, "key", c.Key, "answer", c.Event.Kind.String())
		}
	}
}

// checkSpan returns ctx with the producer's trace context (from the
// message's traceparent header), which the call sends on, and with an
// "eventcenter.checkback" span when tracing is on; end ends the span.
func (v *Verifier) checkSpan(ctx context.Context, m *state.Message, ep checkback.Endpoint, attempt int) (_ context.Context, end func(answer)) {
	ctx = tracing.FromHeaders(ctx, m.Headers)
	if v.cfg.TracerProvider == nil {
		return ctx, func(answer) {}
	}
	ctx, sp := tracing.Tracer(v.cfg.TracerProvider).Start(ctx, tracing.SpanCheckback,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(tracing.AttrMessageID.String(m.MessageID()),
			attribute.String("eventcenter.checkback.protocol", ep.Protocol.String()),
			attribute.Int("eventcenter.checkback.attempt", attempt)))
	return ctx, func(a answer) {
		if a.Err != nil {
			sp.RecordError(a.Err)
			sp.SetStatus(codes.Error, "check-back failed")
		} else {
			sp.SetAttributes(attribute.String("eventcenter.checkback.decision", a.Decision.String()))
		}
		sp.End()
	}
}
