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
	require.Positive(t, in.Count())
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
