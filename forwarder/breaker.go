package forwarder

import (
	"sync"
	"time"
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
type breaker struct {
	threshold   int // <= 0: disabled
	minFailing  time.Duration
	cooldown    time.Duration
	maxCooldown time.Duration

	mu      sync.Mutex
	fails   int
	since   time.Time // the first of the consecutive failures
	round   uint64    // counted failures so far; a batch remembers the round it began in
	open    bool
	pause   time.Duration // the current cooldown while open
	until   time.Time
	probing bool
}

// pass is a batch's permission to be sent: the round it began in and
// whether it is the probe of an open breaker.
type pass struct {
	round uint64
	probe bool
}

// allow tells whether a batch may be sent now; done or release must follow
// with the pass when it may.
func (b *breaker) allow(now time.Time) (pass, bool) {
	if b.threshold <= 0 {
		return pass{}, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return pass{round: b.round}, true
	}
	if b.probing || now.Before(b.until) {
		return pass{}, false
	}
	b.probing = true
	return pass{round: b.round, probe: true}, true
}

// isOpen tells whether the breaker is open (sends paused or probing).
func (b *breaker) isOpen() bool {
	if b.threshold <= 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open
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
	if !failed {
		closed = b.open
		b.fails, b.open, b.probing, b.pause = 0, false, false, 0
		return false, closed, 0
	}
	switch {
	case b.open && p.probe: // a failed probe: open for longer
		b.probing = false
		b.pause = min(2*b.pause, b.maxCooldown)
		b.until = now.Add(b.pause)
	case b.open, p.round != b.round:
		// Sent before the breaker opened, or in flight when another
		// failure was counted: the same trouble, already counted.
	default:
		b.round++
		if b.fails == 0 {
			b.since = now
		}
		b.fails++
		if b.fails >= b.threshold && now.Sub(b.since) >= b.minFailing {
			b.open, opened = true, true
			b.pause = min(b.cooldown, b.maxCooldown)
			b.until = now.Add(b.pause)
		}
	}
	return opened, false, b.pause
}

// release ends a pass that was not used (the send was aborted at stop).
func (b *breaker) release(p pass) {
	if !p.probe {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
}
