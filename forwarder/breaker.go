package forwarder

import (
	"errors"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
)

// breaker pauses a target that keeps failing. After threshold consecutive
// failed batches, spanning at least minFailing, it opens: batches for the target are not sent but left to
// their leases (no attempt burned, so an outage does not drive every message
// to DEAD). After a cooldown one probe batch is sent; success closes it,
// failure opens it again for twice the cooldown, up to maxCooldown.
//
// Failures count in rounds, not in batches: a failed batch counts only when
// it was sent after the previous counted failure was seen. One broker error
// fails every batch in flight that touches its partition (the client fails
// all the partition's buffered records), so counting each of them would let
// a single error from a healthy target open the breaker, and every probe of
// an open breaker uses up one more error of a short burst: ten errors cost
// ten cooldowns. For the same reason failures that span less than minFailing
// (quick retries through a short burst) do not open it.
//
// The circuit itself is sony/gobreaker's, the verifier's breaker too: its
// states, its single half-open probe (MaxRequests 1), and its generations,
// which drop the outcome of a batch sent before the last state change. What
// the forwarder adds sits in gobreaker's hooks (IsSuccessful counts rounds,
// ReadyToTrip applies threshold and minFailing, OnStateChange times the
// cooldown) and in allow, which keeps the cooldown on the injected clock:
// gobreaker's own timer, on the wall clock, is set to its minimum, so the
// circuit is half-open as soon as allow lets a probe through.
type breaker struct {
	threshold   int // <= 0: disabled
	minFailing  time.Duration
	cooldown    time.Duration
	maxCooldown time.Duration

	// mu serialises every call into cb, so the hooks, which gobreaker runs
	// inside those calls, see now and report through opened and closed.
	mu     sync.Mutex
	cb     *gobreaker.TwoStepCircuitBreaker[struct{}]
	epoch  uint64 // counts circuits: a pass of an abandoned one is outdated
	state  gobreaker.State
	now    time.Time // the time of the call in progress
	fails  int
	since  time.Time // the first of the consecutive failures
	round  uint64    // counted failures so far; a batch remembers the round it began in
	counts bool      // the outcome being reported is a counted failure
	pause  time.Duration
	until  time.Time // open: no probe before this
	opened bool      // the call in progress opened the circuit
	closed bool      // the call in progress closed it
}

// gobreaker's smallest open-state timeout: the cooldown is timed by allow.
const circuitTimeout = time.Nanosecond

// errAborted ends a pass that was not used; gobreaker excludes it (a probe's
// slot is freed).
var errAborted = errors.New("send aborted")

// roundFailure is a failed batch and the round it was sent in.
type roundFailure struct{ round uint64 }

func (roundFailure) Error() string { return "batch failed" }

func newBreaker(threshold int, minFailing, cooldown, maxCooldown time.Duration) *breaker {
	b := &breaker{threshold: threshold, minFailing: minFailing, cooldown: cooldown, maxCooldown: maxCooldown}
	b.reset()
	return b
}

// reset starts a fresh, closed circuit. Passes of the one before are
// outdated: done and release do not report them to it.
func (b *breaker) reset() {
	b.epoch++
	b.state = gobreaker.StateClosed
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		MaxRequests:   1,
		Timeout:       circuitTimeout,
		IsSuccessful:  b.isSuccessful,
		ReadyToTrip:   b.readyToTrip,
		IsExcluded:    func(err error) bool { return errors.Is(err, errAborted) },
		OnStateChange: b.stateChanged,
	})
}

// pass is a batch's permission to be sent: the round it began in, whether
// it is the probe of an open breaker, and gobreaker's outcome callback.
type pass struct {
	round uint64
	probe bool
	epoch uint64
	done  func(error)
}

// allow tells whether a batch may be sent now; done or release must follow
// with the pass when it may.
func (b *breaker) allow(now time.Time) (pass, bool) {
	if b.threshold <= 0 {
		return pass{}, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = now
	if b.state != gobreaker.StateClosed && now.Before(b.until) {
		return pass{}, false
	}
	probe := b.state != gobreaker.StateClosed
	done, err := b.cb.Allow()
	if err != nil { // half-open and the probe is out
		return pass{}, false
	}
	return pass{round: b.round, probe: probe, epoch: b.epoch, done: done}, true
}

// isOpen tells whether the breaker is open (sends paused or probing).
func (b *breaker) isOpen() bool {
	if b.threshold <= 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state != gobreaker.StateClosed
}

// done records a batch's outcome: failed means nothing was acknowledged and
// at least one record failed in a way a retry may fix. It tells whether the
// breaker just opened or closed, and for how long it is open.
func (b *breaker) done(p pass, failed bool, now time.Time) (opened, closed bool, pause time.Duration) {
	if b.threshold <= 0 {
		return false, false, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now, b.opened, b.closed = now, false, false
	if p.epoch != b.epoch {
		// Sent on a circuit since abandoned (a probe in flight when a
		// late success closed the breaker): an ordinary batch of the
		// current one. Closed, it reports there; open, only a success
		// counts (below).
		p.probe, p.done = false, nil
		if b.state == gobreaker.StateClosed {
			if d, err := b.cb.Allow(); err == nil {
				p.done = d
			}
		}
	}
	switch {
	case !failed && !p.probe && b.state != gobreaker.StateClosed:
		// A batch sent before the breaker opened got through: the
		// target works again. gobreaker would drop this outcome (an
		// older generation), so the circuit starts afresh.
		b.reset()
		b.fails, b.pause, b.closed = 0, 0, true
	case !failed:
		b.fails = 0 // any success ends the streak, even an outdated one
		if p.done != nil {
			p.done(nil)
		}
	case p.done != nil:
		p.done(roundFailure{p.round})
	}
	return b.opened, b.closed, b.pause
}

// release ends a pass that was not used (the send was aborted at stop).
func (b *breaker) release(p pass) {
	if p.done == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.epoch == b.epoch {
		p.done(errAborted)
	}
}

// isSuccessful is gobreaker's IsSuccessful. A failure counts only in the
// closed state and for a batch sent in the current round.
func (b *breaker) isSuccessful(err error) bool {
	b.counts = false
	var f roundFailure
	if !errors.As(err, &f) {
		b.fails = 0
		return true
	}
	if b.state == gobreaker.StateClosed && f.round == b.round {
		b.counts = true
		b.round++
		if b.fails == 0 {
			b.since = b.now
		}
		b.fails++
	}
	return false
}

// readyToTrip is gobreaker's ReadyToTrip: threshold counted failures that
// began at least minFailing ago.
func (b *breaker) readyToTrip(gobreaker.Counts) bool {
	return b.counts && b.fails >= b.threshold && b.now.Sub(b.since) >= b.minFailing
}

// stateChanged is gobreaker's OnStateChange: it times the cooldown.
func (b *breaker) stateChanged(_ string, from, to gobreaker.State) {
	b.state = to
	switch {
	case to == gobreaker.StateOpen && from == gobreaker.StateClosed:
		b.opened = true
		b.pause = min(b.cooldown, b.maxCooldown)
		b.until = b.now.Add(b.pause)
	case to == gobreaker.StateOpen: // a failed probe: open for longer
		b.pause = min(2*b.pause, b.maxCooldown)
		b.until = b.now.Add(b.pause)
	case to == gobreaker.StateClosed:
		b.closed = true
		b.fails, b.pause = 0, 0
	}
}
