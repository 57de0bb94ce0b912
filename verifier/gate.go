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
		slots: make(chan struct{}, gs.cap),
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
