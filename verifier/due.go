package verifier

import (
	"slices"
	"sync"
	"time"
)

// maxDueHints bounds the due times the verifier keeps between claims;
// past it the latest are dropped, and the poll finds their messages.
const maxDueHints = 256

// dueHints are the times check-backs fall due that DueAt was told of,
// waiting for the run loop.
type dueHints struct {
	mu    sync.Mutex
	times []time.Time
	added chan struct{} // capacity 1: something was added since the loop last took
}

func newDueHints() *dueHints { return &dueHints{added: make(chan struct{}, 1)} }

// DueAt tells the verifier that check-backs fall due at t. Ingest calls it
// for the PREPAREs a batch has just written, so that an idle verifier
// claims them when they are due instead of at its next poll (up to
// Config.PollInterval later). It is a hint: the poll still finds every
// due message. Safe for concurrent use; it never blocks.
func (v *Verifier) DueAt(t time.Time) {
	h := v.hints
	h.mu.Lock()
	if len(h.times) < maxDueHints {
		h.times = append(h.times, t)
	}
	h.mu.Unlock()
	select {
	case h.added <- struct{}{}:
	default:
	}
}

// take returns the due times told since the last take.
func (h *dueHints) take() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.times
	h.times = nil
	return t
}

// dueTimes are the run loop's due times still ahead, earliest first, and
// the timer that fires at the earliest.
type dueTimes struct {
	at    []time.Time
	timer *time.Timer
}

func newDueTimes() *dueTimes {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &dueTimes{timer: t}
}

// add merges told due times; it reports whether one is due already.
func (d *dueTimes) add(told []time.Time, now time.Time) (dueNow bool) {
	for _, t := range told {
		if !t.After(now) {
			dueNow = true
			continue
		}
		if i, found := slices.BinarySearchFunc(d.at, t, time.Time.Compare); !found {
			d.at = slices.Insert(d.at, i, t)
		}
	}
	if len(d.at) > maxDueHints {
		d.at = d.at[:maxDueHints]
	}
	d.arm(now)
	return dueNow
}

// claimed drops the due times a claim taken at now covers.
func (d *dueTimes) claimed(now time.Time) {
	i, _ := slices.BinarySearchFunc(d.at, now, time.Time.Compare)
	for i < len(d.at) && !d.at[i].After(now) {
		i++
	}
	d.at = d.at[i:]
	d.arm(now)
}

// arm sets the timer for the earliest due time, or stops it.
func (d *dueTimes) arm(now time.Time) {
	if len(d.at) == 0 {
		d.timer.Stop()
		return
	}
	d.timer.Reset(d.at[0].Sub(now))
}

func (d *dueTimes) stop() { d.timer.Stop() }
