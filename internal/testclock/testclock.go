// Package testclock is the one clock tests inject wherever time decides
// something (check-backs due, leases, backoff): it stands still until the
// test moves it, so tests control time instead of sleeping.
package testclock

import (
	"sync"
	"time"
)

// Clock is a manual clock, safe for concurrent use. Its Now method is what
// the components take as their clock (Config.Now, store Options.Now).
type Clock struct {
	mu   sync.Mutex
	t    time.Time
	real bool
}

// Start is where New starts: UTC with microsecond precision, as the stores
// keep times.
var Start = time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)

// New returns a clock standing at Start.
func New() *Clock { return At(Start) }

// At returns a clock standing at t.
func At(t time.Time) *Clock { return &Clock{t: t} }

// Real returns a clock that follows the wall clock (Advance and Set do
// nothing), for tests where waits must come due while work runs in real
// time.
func Real() *Clock { return &Clock{real: true} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	if c.real {
		return time.Now()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
