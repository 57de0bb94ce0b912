package verifier

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/internal/breaker"
	"github.com/eventcenter/eventcenter/state"
)

// errShutdown ends a call cut short by Stop; the breaker ignores it.
var errShutdown = errors.New("verifier stopping")

// errNoAnswer is a call that got no answer within its timeout.
var errNoAnswer = errors.New("no answer")

// statusError is an answer with a status outside 2xx.
type statusError struct {
	code int
	body string // quoted snippet
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }

// endpointFault tells whether a call's outcome says the endpoint itself is
// failing, as opposed to an answer it gave for one key. Only these count
// towards opening its circuit:
//
//   - no answer within the timeout;
//   - transport errors: connection refused or reset, DNS, the connection
//     closed before a full answer;
//   - HTTP 5xx and 429 (overloaded, or a proxy in front of a dead service).
//
// Everything the endpoint answered promptly is not a fault, however
// useless: commit, rollback, unknown, an unreadable or wrongly shaped 2xx
// body (HTML, empty, too large), a JSON-RPC error, 4xx, a redirect. Such
// answers concern one key (a producer bug, a bad message) and are retried
// per message with its backoff; pausing the endpoint for them would delay
// every other key's answer. See also keyedFault: even faults open the
// circuit only when they hit several distinct keys in a row.
func endpointFault(err error) bool {
	if err == nil {
		return false
	}
	var se *statusError
	if errors.As(err, &se) {
		return se.code >= 500 || se.code == http.StatusTooManyRequests
	}
	var ne net.Error
	return errors.Is(err, errNoAnswer) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// faultOf is what a call reports to its endpoint's breaker: nil, or a
// *keyedFault when endpointFault says the endpoint failed.
func faultOf(key string, err error) error {
	if !endpointFault(err) {
		return nil
	}
	return &keyedFault{key: key, err: err}
}

// keyedFault is an endpoint fault and the message key it happened for;
// the circuit (breaker.DistinctKeys) counts the distinct keys of a run of
// them: it opens when that reaches BreakerFailures, so one key answered 5xx
// (or timing out) again and again never opens it, while a dead endpoint,
// which fails every key, does.
type keyedFault struct {
	key string
	err error
}

func (f *keyedFault) Error() string      { return f.key + ": " + f.err.Error() }
func (f *keyedFault) Unwrap() error      { return f.err }
func (f *keyedFault) FailureKey() string { return f.key }

// job is one claimed message ready to be called.
type job struct {
	m         state.Message
	ep        checkback.Endpoint
	name      string // ep.String(), computed once per endpoint
	r         *resolved
	biz       *bizState
	claimedAt time.Time
	// throttled: counted as held back by a per-bizID limit.
	throttled bool
}

// gate is the storm control of one endpoint (host:port): at most cap calls
// at once, at most queueCap more messages waiting in memory for them (taken
// by the goroutine of a call that ends, so nothing blocks on a full
// endpoint), and a circuit breaker.
type gate struct {
	cap      int
	queueCap int
	breaker  *breaker.Breaker

	mu       sync.Mutex
	active   int
	queue    []job
	avg      time.Duration        // moving average of call durations
	running  map[uint64]time.Time // start (wall clock) of the calls in flight
	seq      uint64
	nextSlot time.Time // last put-off time handed out
	// halfOpen is when the circuit last became half-open (wall clock, as
	// the breaker's); zero while closed or open.
	halfOpen time.Time
	// probeGrace is how long, after the circuit becomes half-open, only
	// a message never called before may be its probe.
	probeGrace time.Duration
}

// holdForProbe tells whether a message that was called before (and
// failed) must wait while the circuit is half-open, and for how long (wall
// clock): during the first probeGrace of the half-open state the probe is
// kept for a message never called before, so that the keys that failed do
// not keep the circuit open while new messages of the endpoint would get
// answers. After the grace any message may probe: an endpoint whose every
// message failed before still recovers.
func (g *gate) holdForProbe(now time.Time) (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.halfOpen.IsZero() {
		return 0, false
	}
	left := g.halfOpen.Add(g.probeGrace).Sub(now)
	return left, left > 0
}

func (g *gate) setHalfOpen(at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.halfOpen = at
}

// admit takes a call slot (run) or, when all are busy, a waiting place
// (queued); neither means the endpoint is full and j must be put off.
func (g *gate) admit(j job) (run, queued bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active < g.cap {
		g.active++
		return true, false
	}
	if len(g.queue) < g.queueCap {
		g.queue = append(g.queue, j)
		return false, true
	}
	return false, false
}

// room is how many more messages the endpoint takes now, to call or to
// wait for a call, whether every call slot is taken, and the spacing of
// its put-offs (see putOff; 0 while no call has ended to measure it and
// none has run past hangingCall).
func (g *gate) room(minDelay time.Duration) (n int, full bool, step time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	measured := g.avg > 0
	for _, start := range g.running {
		measured = measured || time.Since(start) > hangingCall
	}
	if measured {
		step = g.step(minDelay)
	}
	return max(g.cap-g.active, 0) + max(g.queueCap-len(g.queue), 0), g.active >= g.cap, step
}

// next hands the caller's slot to the oldest waiting job, or releases the
// slot when none waits.
func (g *gate) next() (job, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) > 0 {
		j := g.queue[0]
		g.queue[0] = job{}
		g.queue = g.queue[1:]
		return j, true
	}
	g.active--
	return job{}, false
}

// begin records the start of a call; finish ends it and feeds its
// duration into the moving average.
func (g *gate) begin() (id uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	g.running[g.seq] = time.Now()
	return g.seq
}

func (g *gate) finish(id uint64) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	d := time.Since(g.running[id])
	delete(g.running, id)
	if g.avg == 0 {
		g.avg = d
	} else {
		g.avg = (4*g.avg + d) / 5
	}
	return d
}

// step is the spacing of put-offs (g.mu held): the time the endpoint
// needs per call and slot, a quarter of it.
func (g *gate) step(minDelay time.Duration) time.Duration {
	avg := g.avg
	if avg == 0 { // nothing measured yet
		avg = minDelay
	}
	// A call running much longer than the average (a hanging endpoint)
	// says more than the average does; a connection being set up does not.
	for _, start := range g.running {
		if age := time.Since(start); age > hangingCall {
			avg = max(avg, age)
		}
	}
	// Four times the measured pace: the wait queue absorbs the surplus (the
	// rest is put off again), and an endpoint left idle is the worse error.
	// Measured in TestBacklogBehindSlowEndpointRespectsCap: 2× kept the
	// endpoint busy ~60% of the time, 4× ~83%, for ~2.3 put-offs a message.
	return max(avg/time.Duration(4*g.cap), time.Millisecond/4)
}

// hangingCall is the age from which a running call counts in the pace of
// put-offs.
const hangingCall = 250 * time.Millisecond

// putOff returns when a message for this full endpoint should be tried
// again: at least minDelay from now, and after every message put off
// before it, spaced by the time the endpoint needs per call and slot, so a
// backlog comes back at the pace the endpoint serves it instead of all at
// once. No put-off goes beyond maxDelay: an estimate made while calls were
// slow must not push a backlog far out once they are fast again (messages
// beyond it are simply put off again). r in [0, 1) adds jitter within one
// spacing.
func (g *gate) putOff(now time.Time, minDelay, maxDelay time.Duration, r float64) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	step := g.step(minDelay)
	at := now.Add(minDelay)
	if next := g.nextSlot.Add(step); next.After(at) {
		at = next
	}
	if limit := now.Add(maxDelay); at.After(limit) {
		at = limit
	}
	g.nextSlot = at
	return at.Add(time.Duration(r * float64(step)))
}

// gates holds one gate per endpoint. Endpoints are bounded by the allow
// lists, so the map is too.
type gates struct {
	mu       sync.Mutex
	m        map[string]*gate
	cap      int
	queueCap int
	failures int
	coolDown time.Duration
	metrics  *metrics
	log      *slog.Logger
}

func (gs *gates) get(host string) *gate {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if g, ok := gs.m[host]; ok {
		return g
	}
	g := &gate{
		cap:        gs.cap,
		queueCap:   gs.queueCap,
		running:    map[uint64]time.Time{},
		probeGrace: gs.coolDown / 2,
	}
	// The cool-down runs on the wall clock, as the probe grace does
	// (holdForProbe): the verifier's clock (Config.Now) dates messages.
	g.breaker = breaker.New(breaker.Config{
		Name:        host,
		Now:         time.Now,
		Cooldown:    gs.coolDown,
		MaxCooldown: gs.coolDown,
		Rule:        &breaker.DistinctKeys{Need: gs.failures},
		IsExcluded:  func(err error) bool { return errors.Is(err, errShutdown) },
		OnStateChange: func(c breaker.Change) {
			// Called with the breaker's lock held: takes g.mu, so nothing
			// may call the breaker with g.mu held.
			if c.To == breaker.StateHalfOpen {
				g.setHalfOpen(time.Now())
			} else {
				g.setHalfOpen(time.Time{})
			}
			switch {
			case c.From == breaker.StateClosed:
				gs.metrics.circuitOpen.Inc()
			case c.To == breaker.StateClosed:
				gs.metrics.circuitOpen.Dec()
			}
			gs.log.Warn("check-back endpoint circuit "+c.To.String(), "endpoint", c.Name, "from", c.From.String())
		},
	})
	gs.m[host] = g
	return g
}
