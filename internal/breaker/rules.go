package breaker

import (
	"errors"
	"time"
)

// RoundFailure is a failed request and the round it was allowed in (see
// Rounds).
type RoundFailure struct{ Round uint64 }

func (RoundFailure) Error() string { return "request failed" }

// Rounds opens the circuit after Threshold consecutive failed rounds
// spanning at least MinFailing. A failure counts only when its request was
// allowed in the current round (RoundFailure.Round == Round() when it was
// allowed) and the circuit is closed; each counted failure starts a new
// round. So requests in flight together that fail together (one broker
// error fails every batch touching its partition) count once, and quick
// retries through a short burst do not open the circuit. Any other error
// is a success and ends the streak. Threshold <= 0 never trips.
type Rounds struct {
	Threshold  int
	MinFailing time.Duration

	fails int
	since time.Time // the first of the consecutive failures
	round uint64
}

// Round is the current round; a request remembers it when allowed and
// reports RoundFailure{Round: it} when it fails. Call it with the
// breaker's lock held or when nothing else reports to the breaker (the
// forwarder serialises its breaker calls).
func (r *Rounds) Round() uint64 { return r.round }

// EndStreak forgets the failures so far, for a success that its breaker
// is not told about (the outcome of an outdated request).
func (r *Rounds) EndStreak() { r.fails = 0 }

// Record implements Rule.
func (r *Rounds) Record(err error, now time.Time, closed bool) (failed, trip bool) {
	var f RoundFailure
	if !errors.As(err, &f) {
		r.fails = 0
		return false, false
	}
	if !closed || f.Round != r.round {
		return true, false
	}
	r.round++
	if r.fails == 0 {
		r.since = now
	}
	r.fails++
	return true, r.Threshold > 0 && r.fails >= r.Threshold && now.Sub(r.since) >= r.MinFailing
}

// Reset implements Rule: a change of state ends the streak.
func (r *Rounds) Reset() { r.fails = 0 }

// Keyed is a failure that concerns one key (a message key); DistinctKeys
// reads it with errors.As.
type Keyed interface {
	error
	FailureKey() string
}

// DistinctKeys opens the circuit when a run of consecutive failures has
// hit Need distinct keys: a Keyed error is a failure, anything else a
// success that ends the run. One key failing again and again never opens
// it; a dead endpoint, which fails every key, does.
type DistinctKeys struct {
	Need int

	keys map[string]struct{}
}

// Record implements Rule.
func (d *DistinctKeys) Record(err error, _ time.Time, _ bool) (failed, trip bool) {
	var k Keyed
	if !errors.As(err, &k) {
		clear(d.keys)
		return false, false
	}
	if d.keys == nil {
		d.keys = map[string]struct{}{}
	}
	if len(d.keys) < d.Need {
		d.keys[k.FailureKey()] = struct{}{}
	}
	return true, len(d.keys) >= d.Need
}

// Reset implements Rule: a change of state starts a new run.
func (d *DistinctKeys) Reset() { clear(d.keys) }
