package onlinetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Inserts runs one insert at a time, two milliseconds apart, and beside it
// samples whether the inserting connection waits for a lock, every
// millisecond. The time between two samples that both saw a lock wait is
// counted as lock wait (a single sample counts nothing, so a late sample
// after a short wait does not inflate it).
type Inserts struct {
	stop       context.CancelFunc
	wg         sync.WaitGroup
	n          atomic.Int64
	longest    atomic.Int64
	lockWaited atomic.Int64
	longestRun atomic.Int64 // the longest unbroken run of lock-waiting samples
	insertErr  error
	probeErr   error
}

// Start begins inserting with insert (i counts from 0) and probing with
// lockWaiting until Finish or the end of the test.
func Start(t *testing.T, insert func(ctx context.Context, i int) error, lockWaiting func(ctx context.Context) (bool, error)) *Inserts {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	in := &Inserts{stop: cancel}
	in.wg.Go(func() { in.probe(ctx, lockWaiting) })
	in.wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			start := time.Now()
			err := insert(ctx, i)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				in.insertErr = err
				return
			}
			if d := int64(time.Since(start)); d > in.longest.Load() {
				in.longest.Store(d)
			}
			in.n.Add(1)
			time.Sleep(2 * time.Millisecond)
		}
	})
	t.Cleanup(in.Finish)
	return in
}

func (in *Inserts) probe(ctx context.Context, lockWaiting func(ctx context.Context) (bool, error)) {
	last, waiting := time.Now(), false
	var run time.Duration
	for ctx.Err() == nil {
		lock, err := lockWaiting(ctx)
		now := time.Now()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			in.probeErr = err
			return
		}
		if waiting && lock {
			in.lockWaited.Add(int64(now.Sub(last)))
			run += now.Sub(last)
			if int64(run) > in.longestRun.Load() {
				in.longestRun.Store(int64(run))
			}
		} else {
			run = 0
		}
		last, waiting = now, lock
		time.Sleep(time.Millisecond)
	}
}

// Finish stops inserting and probing; it may be called more than once.
func (in *Inserts) Finish() {
	in.stop()
	in.wg.Wait()
}

// Count is how many inserts succeeded.
func (in *Inserts) Count() int64 { return in.n.Load() }

// Longest is the longest single insert.
func (in *Inserts) Longest() time.Duration { return time.Duration(in.longest.Load()) }

// LongestLockWait is the longest the inserts were seen waiting for a lock
// without a break.
func (in *Inserts) LongestLockWait() time.Duration { return time.Duration(in.longestRun.Load()) }

// LockWait is how long the inserts were seen waiting for a lock.
func (in *Inserts) LockWait() time.Duration { return time.Duration(in.lockWaited.Load()) }

// Err is the first insert's and the probe's error, if either failed
// (after Finish).
func (in *Inserts) Err() error {
	var errs []error
	if in.insertErr != nil {
		errs = append(errs, fmt.Errorf("an insert failed: %w", in.insertErr))
	}
	if in.probeErr != nil {
		errs = append(errs, fmt.Errorf("the lock-wait probe failed: %w", in.probeErr))
	}
	return errors.Join(errs...)
}

// RequireNoErrors fails the test if an insert or a probe failed.
func (in *Inserts) RequireNoErrors(t *testing.T) {
	t.Helper()
	require.NoError(t, in.Err())
}

// RequireOnline finishes the inserts and fails the test when one failed,
// none succeeded, one was seen waiting for a lock maxInsert or longer
// without a break, or they were seen waiting for a lock during half the
// step (took) or more, once that wait reaches floor (a wait shorter than
// floor is no outage). An insert's own duration is only logged: on a
// loaded machine it can pass maxInsert without waiting for any lock.
func (in *Inserts) RequireOnline(t *testing.T, took, maxInsert, floor time.Duration) {
	t.Helper()
	in.Finish()
	in.RequireNoErrors(t)
	t.Logf("step took %s; %d inserts meanwhile, the longest %s, seen waiting for a lock %s (at most %s at once)",
		took, in.Count(), in.Longest(), in.LockWait(), in.LongestLockWait())
	require.Positive(t, in.Count(), "no insert went through during the step")
	require.Less(t, in.LongestLockWait(), maxInsert, "an insert waited for a lock as long as the lock timeout")
	if in.LockWait() >= floor {
		require.Less(t, in.LockWait(), took/2, "the inserts waited for a lock during most of the step")
	}
}

// RequireBlocked finishes the inserts and fails the test unless they were
// seen waiting for a lock during at least half the step: the control that
// shows the check can fail.
func (in *Inserts) RequireBlocked(t *testing.T, took time.Duration) {
	t.Helper()
	in.Finish()
	in.RequireNoErrors(t)
	t.Logf("blocking step took %s; seen waiting for a lock %s", took, in.LockWait())
	require.GreaterOrEqual(t, in.LockWait(), took/2, "the probe missed the inserts waiting behind a blocking step")
}
