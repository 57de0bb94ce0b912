package forwarder

import (
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fail sends one batch (allowed) that fails, and returns whether it opened.
func (b *breaker) failOne(t *testing.T, now time.Time) bool {
	t.Helper()
	p, ok := b.allow(now)
	require.True(t, ok)
	opened, _, _ := b.done(p, true, now)
	return opened
}

func TestBreakerCountsBatchesFailingTogetherOnce(t *testing.T) {
	t.Parallel()
	b := newBreaker(2, 0, time.Second, time.Minute)
	// Four workers' batches in flight when one broker error fails them all.
	var passes []pass
	for range 4 {
		p, ok := b.allow(t0)
		require.True(t, ok)
		passes = append(passes, p)
	}
	for _, p := range passes {
		opened, _, _ := b.done(p, true, t0)
		require.False(t, opened, "batches failing together count once")
	}
	// The next round fails too: two rounds, open.
	require.True(t, b.failOne(t, t0))
	_, ok := b.allow(t0)
	require.False(t, ok)
}

func TestBreakerOpensOnlyWhenFailuresLastFailingFor(t *testing.T) {
	t.Parallel()
	b := newBreaker(3, 5*time.Second, time.Second, time.Minute)
	for i := range 5 { // quick retries through a short burst
		require.False(t, b.failOne(t, t0.Add(time.Duration(i)*100*time.Millisecond)))
	}
	// A success ends the streak; a new one starts later.
	p, _ := b.allow(t0.Add(time.Second))
	_, closed, _ := b.done(p, false, t0.Add(time.Second))
	require.False(t, closed, "it was never open")
	require.False(t, b.failOne(t, t0.Add(2*time.Second)))
	require.False(t, b.failOne(t, t0.Add(4*time.Second)))
	require.False(t, b.failOne(t, t0.Add(6*time.Second)), "4s since the streak began")
	require.True(t, b.failOne(t, t0.Add(7*time.Second)))
}

func TestBreakerFailedProbesDoubleTheCooldownUpToMax(t *testing.T) {
	t.Parallel()
	b := newBreaker(1, 0, time.Second, 3*time.Second)
	p, _ := b.allow(t0)
	opened, _, pause := b.done(p, true, t0)
	require.True(t, opened)
	require.Equal(t, time.Second, pause)
	now := t0
	for _, want := range []time.Duration{2 * time.Second, 3 * time.Second, 3 * time.Second} {
		_, ok := b.allow(now.Add(pause - time.Millisecond))
		require.False(t, ok, "still cooling down")
		now = now.Add(pause)
		probe, ok := b.allow(now)
		require.True(t, ok)
		require.True(t, probe.probe)
		_, ok = b.allow(now)
		require.False(t, ok, "one probe at a time")
		opened, closed, got := b.done(probe, true, now)
		require.False(t, opened)
		require.False(t, closed)
		require.Equal(t, want, got)
		pause = got
	}
	now = now.Add(pause)
	probe, ok := b.allow(now)
	require.True(t, ok)
	_, closed, _ := b.done(probe, false, now)
	require.True(t, closed)
	// Closed resets the cooldown.
	p, ok = b.allow(now)
	require.True(t, ok)
	opened, _, pause = b.done(p, true, now)
	require.True(t, opened)
	require.Equal(t, time.Second, pause)
}

func TestBreakerBatchesSentBeforeItOpenedAreNoProbes(t *testing.T) {
	t.Parallel()
	b := newBreaker(1, 0, time.Second, time.Minute)
	early, ok := b.allow(t0)
	require.True(t, ok)
	require.True(t, b.failOne(t, t0))
	probe, ok := b.allow(t0.Add(time.Second))
	require.True(t, ok)
	require.True(t, probe.probe)
	// The batch sent before it opened fails late: the probe is still the
	// only one, and the cooldown is not extended.
	_, _, pause := b.done(early, true, t0.Add(1500*time.Millisecond))
	require.Equal(t, time.Second, pause)
	b.release(early)
	_, ok = b.allow(t0.Add(3 * time.Second))
	require.False(t, ok, "a second probe while the first is in flight")
	// An aborted probe lets the next batch probe.
	b.release(probe)
	again, ok := b.allow(t0.Add(3 * time.Second))
	require.True(t, ok)
	require.True(t, again.probe)
}

func TestBreakerDisabled(t *testing.T) {
	t.Parallel()
	b := newBreaker(0, 0, 0, 0)
	for range 10 {
		require.False(t, b.failOne(t, t0))
	}
}

// A batch sent before the breaker opened that succeeds late says the target
// works: it closes the breaker, as a successful probe would.
func TestBreakerLateSuccessClosesIt(t *testing.T) {
	t.Parallel()
	b := newBreaker(1, 0, time.Second, time.Minute)
	early, ok := b.allow(t0)
	require.True(t, ok)
	require.True(t, b.failOne(t, t0))
	require.True(t, b.isOpen())
	opened, closed, _ := b.done(early, false, t0.Add(100*time.Millisecond))
	require.False(t, opened)
	require.True(t, closed)
	require.False(t, b.isOpen())
	_, ok = b.allow(t0.Add(200 * time.Millisecond))
	require.True(t, ok, "closed: no cooldown left")
	// And it counts afresh: one failure opens it again, for the first
	// cooldown.
	p, _ := b.allow(t0.Add(300 * time.Millisecond))
	opened, _, pause := b.done(p, true, t0.Add(300*time.Millisecond))
	require.True(t, opened)
	require.Equal(t, time.Second, pause)
}

// The circuit is gobreaker's (as the verifier's): its state is the
// forwarder's open or closed.
func TestBreakerIsGobreaker(t *testing.T) {
	t.Parallel()
	b := newBreaker(1, 0, time.Second, time.Minute)
	require.Equal(t, gobreaker.StateClosed, b.cb.State())
	require.True(t, b.failOne(t, t0))
	require.Equal(t, gobreaker.StateOpen, b.state)
	p, ok := b.allow(t0.Add(time.Second))
	require.True(t, ok)
	require.True(t, p.probe)
	require.Equal(t, gobreaker.StateHalfOpen, b.cb.State())
	_, closed, _ := b.done(p, false, t0.Add(time.Second))
	require.True(t, closed)
	require.Equal(t, gobreaker.StateClosed, b.cb.State())
}

// A probe in flight when a late success closed the breaker reports to a
// circuit that is gone: its failure counts as an ordinary batch's on the
// closed breaker, as before the breaker used gobreaker.
func TestBreakerProbeOutdatedByALateSuccess(t *testing.T) {
	t.Parallel()
	b := newBreaker(2, 0, time.Second, time.Minute)
	early, _ := b.allow(t0)
	require.False(t, b.failOne(t, t0))
	require.True(t, b.failOne(t, t0))
	probe, ok := b.allow(t0.Add(time.Second))
	require.True(t, ok)
	require.True(t, probe.probe)
	_, closed, _ := b.done(early, false, t0.Add(1100*time.Millisecond))
	require.True(t, closed)
	opened, closed, _ := b.done(probe, true, t0.Add(1200*time.Millisecond))
	require.False(t, opened, "one round of two")
	require.False(t, closed)
	require.False(t, b.isOpen())
	b.release(probe) // no effect
	require.True(t, b.failOne(t, t0.Add(2*time.Second)), "the second round opens it")
}
