package forwarder

import (
	"errors"
	"sync"
	"time"

	circuit "github.com/eventcenter/eventcenter/internal/breaker"
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
// The circuit is internal/breaker's, the verifier's too: gobreaker's states,
// single half-open probe and generations (which drop the outcome of a batch
// sent before the last state change), the cooldown timed on the clock the
// forwarder passes in, and the breaker.Rounds trip rule. What the forwarder
// adds is a batch's pass (its round, whether it is the probe) and the
// circuit's restart on a late success (reset).
type breaker struct {
	threshold   int // <= 0: disabled
	minFailing  time.Duration
	cooldown    time.Duration
	maxCooldown time.Duration

	// mu serialises every call into cb, so that its clock (now) and its
	// state-change hook (state, opened, closed, pause) are the call's.
	mu     sync.Mutex
	cb     *circuit.Breaker
	rule   *circuit.Rounds
	epoch  uint64 // counts circuits: a pass of an abandoned one is outdated
	state  circuit.State
	now    time.Time // the time of the call in progress: cb's clock
	pause  time.Duration
	opened bool // the call in progress opened the circuit
	closed bool // the call in progress closed it
}

// errAborted ends a pass that was not used; the circuit excludes it (a
// probe's slot is freed).
var errAborted = errors.New("send aborted")

func newBreaker(threshold int, minFailing, cooldown, maxCooldown time.Duration) *breaker {
	b := &breaker{threshold: threshold, minFailing: minFailing, cooldown: cooldown, maxCooldown: maxCooldown,
		rule: &circuit.Rounds{Threshold: threshold, MinFailing: minFailing}}
	b.reset()
	return b
}

// reset starts a fresh, closed circuit. Passes of the one before are
// outdated: done and release do not report them to it.
func (b *breaker) reset() {
	b.epoch++
	b.state = circuit.StateClosed
	b.cb = circuit.New(circuit.Config{
		Now:           func() time.Time { return b.now },
		Cooldown:      b.cooldown,
		MaxCooldown:   b.maxCooldown,
		Rule:          b.rule,
		IsExcluded:    func(err error) bool { return errors.Is(err, errAborted) },
		OnStateChange: b.stateChanged,
	})
}

// pass is a batch's permission to be sent: the round it began in, whether
// it is the probe of an open breaker, and the circuit's outcome callback.
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
	probe := b.state != circuit.StateClosed
	done, err := b.cb.Allow()
	if err != nil { // open and cooling down, or half-open and the probe is out
		return pass{}, false
	}
	return pass{round: b.rule.Round(), probe: probe, epoch: b.epoch, done: done}, true
}

// isOpen tells whether the breaker is open (sends paused or probing).
func (b *breaker) isOpen() bool {
	if b.threshold <= 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state != circuit.StateClosed
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
		if b.state == circuit.StateClosed {
			if d, err := b.cb.Allow(); err == nil {
				p.done = d
			}
		}
	}
	switch {
	case !failed && !p.probe && b.state != circuit.StateClosed:
		// A batch sent before the breaker opened got through: the
		// target works again. The circuit would drop this outcome (an
		// older generation), so it starts afresh.
		b.reset()
		b.rule.EndStreak()
		b.pause, b.closed = 0, true
	case !failed:
		b.rule.EndStreak() // any success ends the streak, even an outdated one
		if p.done != nil {
			p.done(nil)
		}
	case p.done != nil:
		p.done(circuit.RoundFailure{Round: p.round})
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

// stateChanged is the circuit's OnStateChange, run inside a call into cb
// (b.mu held): it reports the change to the call in progress.
func (b *breaker) stateChanged(c circuit.Change) {
	b.state = c.To
	switch {
	case c.To == circuit.StateOpen:
		b.opened = b.opened || c.From == circuit.StateClosed
		b.pause = c.Pause
	case c.To == circuit.StateClosed:
		b.closed = true
		b.pause = 0
	}
}
