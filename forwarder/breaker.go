package forwarder

import (
	"sync"
	"time"
)

// breaker pauses a target that keeps failing. After Failures consecutive
// failed batches it opens: batches for the target are not sent but left to
// their leases (no attempt burned, so an outage does not drive every message
// to DEAD). After Cooldown one probe batch is sent; success closes it, failure
// opens it for another Cooldown.
type breaker struct {
	threshold int // <= 0: disabled
	cooldown  time.Duration

	mu      sync.Mutex
	fails   int
	open    bool
	until   time.Time
	probing bool
}

// allow tells whether a batch may be sent now.
func (b *breaker) allow(now time.Time) bool {
	if b.threshold <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return true
	}
	if b.probing || now.Before(b.until) {
		return false
	}
	b.probing = true
	return true
}

// done records a batch's outcome: failed means nothing was acknowledged and
// at least one record failed in a way a retry may fix. It tells whether the
// breaker just opened or closed.
func (b *breaker) done(failed bool, now time.Time) (opened, closed bool) {
	if b.threshold <= 0 {
		return false, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !failed {
		closed = b.open
		b.fails, b.open, b.probing = 0, false, false
		return false, closed
	}
	b.fails++
	switch {
	case b.open: // a failed probe
		b.probing = false
		b.until = now.Add(b.cooldown)
	case b.fails >= b.threshold:
		b.open = true
		b.until = now.Add(b.cooldown)
		opened = true
	}
	return opened, false
}

// release ends a probe that was not carried out (aborted at stop).
func (b *breaker) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
}
