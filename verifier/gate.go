package verifier

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/eventcenter/eventcenter/state"
)

// errShutdown ends a call cut short by Stop; the breaker ignores it.
var errShutdown = errors.New("verifier stopping")

// job is one claimed message ready to be called.
type job struct {
	m         state.Message
	ep        Endpoint
	r         *resolved
	claimedAt time.Time
}

// gate is the storm control of one endpoint (host:port): at most cap calls
// at once, at most queueCap more messages waiting in memory for them (taken
// by the goroutine of a call that ends, so nothing blocks on a full
// endpoint), and a circuit breaker.
type gate struct {
	cap      int
	queueCap int
	breaker  *gobreaker.TwoStepCircuitBreaker[struct{}]

	mu       sync.Mutex
	active   int
	queue    []job
	avg      time.Duration        // moving average of call durations
	running  map[uint64]time.Time // start (wall clock) of the calls in flight
	seq      uint64
	nextSlot time.Time // last put-off time handed out
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
	step := max(avg/time.Duration(4*g.cap), time.Millisecond/4)
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
	failures := uint32(gs.failures)
	g := &gate{
		cap:      gs.cap,
		queueCap: gs.queueCap,
		running:  map[uint64]time.Time{},
		breaker: gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
			Name:        host,
			MaxRequests: 1,
			Timeout:     gs.coolDown,
			ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
			IsExcluded:  func(err error) bool { return errors.Is(err, errShutdown) },
			OnStateChange: func(name string, from, to gobreaker.State) {
				switch {
				case from == gobreaker.StateClosed:
					gs.metrics.circuitOpen.Inc()
				case to == gobreaker.StateClosed:
					gs.metrics.circuitOpen.Dec()
				}
				gs.log.Warn("check-back endpoint circuit "+to.String(), "endpoint", name, "from", from.String())
			},
		}),
	}
	gs.m[host] = g
	return g
}
