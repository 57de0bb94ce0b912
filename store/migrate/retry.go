package migrate

import (
	"context"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// LockRetry runs a schema step again when it waited too long for a lock
// (PostgreSQL's lock_timeout, MySQL's lock_wait_timeout) or lost a
// deadlock: the step did not run, and a long transaction that held the lock
// may be gone by the next try. Waits double from Backoff up to 16 times it,
// without jitter (one migrating process, nothing to spread).
type LockRetry struct {
	// Tries is how many times the step runs at most (at least 1).
	Tries int
	// Backoff is the first wait between tries.
	Backoff time.Duration
	// Retryable tells a lock wait or deadlock error from any other.
	Retryable func(error) bool
	// Waited names what each try waited for, for the give-up error, e.g.
	// "lock_timeout 1s for a lock".
	Waited string
	// OnRetry, if set, is told of each retry before its wait.
	OnRetry func(try int, wait time.Duration, err error)
}

// Do runs step until it succeeds, fails with an error Retryable refuses,
// Tries runs are used or ctx ends.
func (r LockRetry) Do(ctx context.Context, step func() error) error {
	exp := backoff.NewExponentialBackOff()
	exp.InitialInterval = r.Backoff
	exp.Multiplier = 2
	exp.MaxInterval = 16 * r.Backoff
	exp.RandomizationFactor = 0
	exp.MaxElapsedTime = 0
	exp.Reset()
	tries := 0
	err := backoff.RetryNotify(func() error {
		tries++
		err := step()
		if err != nil && !r.Retryable(err) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(backoff.WithMaxRetries(exp, uint64(max(r.Tries, 1)-1)), ctx), func(err error, wait time.Duration) {
		if r.OnRetry != nil {
			r.OnRetry(tries, wait, err)
		}
	})
	if err != nil && ctx.Err() == nil && r.Retryable(err) {
		return fmt.Errorf("gave up after %d tries, each waiting at most %s (a long transaction may hold it): %w", tries, r.Waited, err)
	}
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
