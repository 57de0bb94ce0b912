package verifier

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
)

// errShutdown ends a call cut short by Stop; the breaker ignores it.
var errShutdown = errors.New("verifier stopping")

// gate is the storm control of one endpoint (host:port): a concurrency cap
// and a circuit breaker.
type gate struct {
	slots   chan struct{}
	breaker *gobreaker.TwoStepCircuitBreaker[struct{}]

	mu       sync.Mutex
	avg      time.Duration        // moving average of call durations
	running  map[uint64]time.Time // start (wall clock) of the calls in flight
	seq      uint64
	nextSlot time.Time // last put-off time handed out
}

// begin records the start of a call; finish(took) ends it.
func (g *gate) begin() (id uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	g.running[g.seq] = time.Now()
	return g.seq
}

func (g *gate) finish(id uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.running, id)
}

// observe feeds a call duration into the moving average.
func (g *gate) observe(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.avg == 0 {
		g.avg = d
		return
	}
	g.avg = (4*g.avg + d) / 5
}

// putOff returns when a message for this full endpoint should be tried
// again: at least minDelay from now, and after every message put off
// before it, spaced by the time the endpoint needs per call and slot, so a
// backlog comes back at the pace the endpoint serves it instead of all at
// once. r in [0, 1) adds jitter within one spacing.
func (g *gate) putOff(now time.Time, minDelay time.Duration, r float64) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	avg := g.avg
	if avg == 0 { // nothing measured yet
		avg = minDelay
	}
	// A call running longer than the average (a hanging endpoint) says more
	// than the average does.
	for _, start := range g.running {
		avg = max(avg, time.Since(start))
	}
	step := max(avg/time.Duration(cap(g.slots)), time.Millisecond)
	at := now.Add(minDelay)
	if next := g.nextSlot.Add(step); next.After(at) {
		at = next
	}
	g.nextSlot = at
	return at.Add(time.Duration(r * float64(step)))
}

// tryAcquire takes a slot without waiting.
func (g *gate) tryAcquire() bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (g *gate) release() { <-g.slots }

// gates holds one gate per endpoint. Endpoints are bounded by the allow
// lists, so the map is too.
type gates struct {
	mu       sync.Mutex
	m        map[string]*gate
	cap      int
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
		slots:   make(chan struct{}, gs.cap),
		running: map[uint64]time.Time{},
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
