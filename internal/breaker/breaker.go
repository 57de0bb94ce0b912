package breaker

import (
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
)

// State is gobreaker's: StateClosed, StateOpen or StateHalfOpen.
type State = gobreaker.State

// The states of a circuit.
const (
	StateClosed   = gobreaker.StateClosed
	StateHalfOpen = gobreaker.StateHalfOpen
	StateOpen     = gobreaker.StateOpen
)

// ErrOpen is what Allow returns while the circuit is open or its one
// half-open probe is out (gobreaker's errors).
var (
	ErrOpen         = gobreaker.ErrOpenState
	ErrTooManyProbe = gobreaker.ErrTooManyRequests
)

// Rule decides which outcomes are failures and when failures open a
// closed circuit. Its methods are called with the breaker's lock held, in
// the order the outcomes are reported, so a Rule needs no lock of its own
// as long as only its breaker calls it.
type Rule interface {
	// Record is given every reported outcome that is not excluded: err is
	// nil for a success. It returns whether the outcome is a failure and,
	// for a failure while closed (the circuit's state when the outcome is
	// reported), whether the circuit opens now.
	Record(err error, now time.Time, closed bool) (failed, trip bool)
	// Reset is called on every change of state.
	Reset()
}

// Change is a change of state, as given to Config.OnStateChange.
type Change struct {
	Name     string
	From, To State
	// Pause is how long the circuit stays open from now when To is
	// StateOpen; zero otherwise.
	Pause time.Duration
}

// Config configures a Breaker.
type Config struct {
	// Name is gobreaker's name, passed to OnStateChange.
	Name string
	// Now is the clock the cool-down is timed on; nil means time.Now.
	Now func() time.Time
	// Cooldown is how long the circuit stays open before one probe is let
	// through. Must be positive.
	Cooldown time.Duration
	// MaxCooldown caps the pause: a failed probe opens the circuit again
	// for twice the last pause, up to MaxCooldown. At or below Cooldown
	// the pause is always Cooldown (and Cooldown is capped by it when set).
	MaxCooldown time.Duration
	// Rule is the trip rule; required.
	Rule Rule
	// IsExcluded marks outcomes that say nothing about the target (a
	// request aborted at shutdown): not counted, and a probe's slot is
	// freed. Nil excludes nothing.
	IsExcluded func(error) bool
	// OnStateChange is called on every change of state with the breaker's
	// lock held: it must not call the breaker.
	OnStateChange func(Change)
}

// Breaker is a circuit breaker, safe for concurrent use.
type Breaker struct {
	cfg Config

	// mu serialises every call into cb, so that the hooks gobreaker runs
	// inside those calls see now and update the fields below.
	mu    sync.Mutex
	cb    *gobreaker.TwoStepCircuitBreaker[struct{}]
	now   time.Time // the time of the call in progress
	state State
	trip  bool // the outcome being reported opens the circuit
	pause time.Duration
	until time.Time // open: no probe before this
}

// gobreaker's smallest open-state timeout: the cool-down is timed here.
const circuitTimeout = time.Nanosecond

// New returns a closed breaker.
func New(cfg Config) *Breaker {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxCooldown <= 0 {
		cfg.MaxCooldown = cfg.Cooldown
	}
	b := &Breaker{cfg: cfg, state: StateClosed}
	excluded := cfg.IsExcluded
	if excluded == nil {
		excluded = func(error) bool { return false }
	}
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:          cfg.Name,
		MaxRequests:   1,
		Timeout:       circuitTimeout,
		IsSuccessful:  b.isSuccessful,
		ReadyToTrip:   func(gobreaker.Counts) bool { return b.trip },
		IsExcluded:    excluded,
		OnStateChange: b.stateChanged,
	})
	return b
}

// cooling tells whether the circuit is open and its cool-down has not
// passed; b.mu is held.
func (b *Breaker) cooling() bool {
	return b.state == StateOpen && b.now.Before(b.until)
}

// State returns the circuit's state at Config.Now: an open circuit whose
// cool-down has passed becomes half-open.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = b.cfg.Now()
	if b.cooling() {
		return StateOpen
	}
	return b.cb.State()
}

// Allow asks to send one request. On success done must be called with its
// outcome (nil: success; an error the Rule or Config.IsExcluded reads);
// ErrOpen or ErrTooManyProbe refuse it.
func (b *Breaker) Allow() (done func(error), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = b.cfg.Now()
	if b.cooling() {
		return nil, ErrOpen
	}
	d, err := b.cb.Allow()
	if err != nil {
		return nil, err
	}
	return func(err error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.now = b.cfg.Now()
		if b.cooling() {
			// Allowed before the circuit opened: an outdated outcome,
			// which gobreaker would drop too. It is not asked, because
			// its own timer (not the cool-down) would make the circuit
			// half-open.
			return
		}
		d(err)
	}, nil
}

// isSuccessful is gobreaker's IsSuccessful: the Rule decides, and whether
// a failure trips is kept for ReadyToTrip, which gobreaker calls next.
func (b *Breaker) isSuccessful(err error) bool {
	failed, trip := b.cfg.Rule.Record(err, b.now, b.state == StateClosed)
	b.trip = failed && trip
	return !failed
}

// stateChanged is gobreaker's OnStateChange: it times the cool-down.
func (b *Breaker) stateChanged(name string, from, to State) {
	b.state = to
	switch {
	case to == StateOpen && from == StateClosed:
		b.pause = min(b.cfg.Cooldown, b.cfg.MaxCooldown)
		b.until = b.now.Add(b.pause)
	case to == StateOpen: // a failed probe: open for longer
		b.pause = min(2*b.pause, b.cfg.MaxCooldown)
		b.until = b.now.Add(b.pause)
	case to == StateClosed:
		b.pause = 0
	}
	b.cfg.Rule.Reset()
	if b.cfg.OnStateChange != nil {
		c := Change{Name: name, From: from, To: to}
		if to == StateOpen {
			c.Pause = b.pause
		}
		b.cfg.OnStateChange(c)
	}
}
