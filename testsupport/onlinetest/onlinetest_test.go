package onlinetest_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/testsupport/onlinetest"
)

func noop(context.Context, int) error { return nil }

// A connection seen waiting in sample after sample counts that time.
func TestLockWaitAddsUpRunsOfWaitingSamples(t *testing.T) {
	t.Parallel()
	in := onlinetest.Start(t, noop, func(context.Context) (bool, error) { return true, nil })
	time.Sleep(100 * time.Millisecond)
	in.Finish()
	in.RequireNoErrors(t)
	require.Greater(t, in.LockWait(), 50*time.Millisecond)
	require.Equal(t, in.LockWait(), in.LongestLockWait(), "one unbroken wait")
	require.Positive(t, in.Count())
}

// A sample that sees no wait ends a run: the longest wait is one run's,
// not the sum of them.
func TestLongestLockWaitIsOneRun(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	in := onlinetest.Start(t, noop, func(context.Context) (bool, error) { return n.Add(1)%10 != 0, nil })
	require.Eventually(t, func() bool { return n.Load() > 60 }, 10*time.Second, time.Millisecond)
	in.Finish()
	in.RequireNoErrors(t)
	require.Positive(t, in.LongestLockWait())
	require.Less(t, in.LongestLockWait(), in.LockWait(), "runs were added up")
}

// Single waiting samples between others count nothing: a late sample after
// a short wait must not look like a long one.
func TestLockWaitIgnoresLoneSamples(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	in := onlinetest.Start(t, noop, func(context.Context) (bool, error) { return n.Add(1)%2 == 0, nil })
	time.Sleep(50 * time.Millisecond)
	in.Finish()
	require.Zero(t, in.LockWait())
	require.Zero(t, in.LongestLockWait())
	require.Greater(t, n.Load(), int64(4))
}

// A failing insert or probe is reported, not taken for an online step.
func TestErrorsAreKept(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	in := onlinetest.Start(t, func(context.Context, int) error { return boom }, func(context.Context) (bool, error) { return false, nil })
	time.Sleep(10 * time.Millisecond)
	in.Finish()
	require.ErrorIs(t, in.Err(), boom)
	require.ErrorContains(t, in.Err(), "an insert failed")
	require.Zero(t, in.Count())

	probe := onlinetest.Start(t, noop, func(context.Context) (bool, error) { return false, boom })
	time.Sleep(10 * time.Millisecond)
	probe.Finish()
	require.ErrorContains(t, probe.Err(), "the lock-wait probe failed: boom")
}
