package breaker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/internal/testclock"
)

// failN is a rule that trips on the n-th consecutive failure (any error).
type failN struct {
	n, fails int
	resets   int
}

func (f *failN) Record(err error, _ time.Time, closed bool) (bool, bool) {
	if err == nil {
		f.fails = 0
		return false, false
	}
	f.fails++
	return true, closed && f.fails >= f.n
}

func (f *failN) Reset() { f.fails = 0; f.resets++ }

var errDown = errors.New("down")

func report(t *testing.T, b *Breaker, err error) {
	t.Helper()
	done, aerr := b.Allow()
	require.NoError(t, aerr)
	done(err)
}

// The cool-down runs on the injected clock: the circuit stays open until
// the clock has moved past it, whatever the wall clock does; a failed
// probe doubles the pause up to MaxCooldown, a successful one closes it.
func TestCooldownOnTheInjectedClock(t *testing.T) {
	t.Parallel()
	clk := testclock.New()
	var changes []Change
	rule := &failN{n: 2}
	b := New(Config{Name: "t", Now: clk.Now, Cooldown: time.Second, MaxCooldown: 3 * time.Second, Rule: rule,
		OnStateChange: func(c Change) { changes = append(changes, c) }})
	report(t, b, errDown)
	require.Equal(t, StateClosed, b.State())
	report(t, b, errDown)
	require.Equal(t, StateOpen, b.State())
	require.Equal(t, []Change{{Name: "t", From: StateClosed, To: StateOpen, Pause: time.Second}}, changes)

	time.Sleep(5 * time.Millisecond) // gobreaker's own timer has long passed
	_, err := b.Allow()
	require.ErrorIs(t, err, ErrOpen, "open until the injected clock says so")
	clk.Advance(time.Second - time.Nanosecond)
	require.Equal(t, StateOpen, b.State())

	for _, pause := range []time.Duration{2 * time.Second, 3 * time.Second, 3 * time.Second} {
		clk.Advance(time.Second)
		clk.Advance(changes[len(changes)-1].Pause - time.Second)
		probe, err := b.Allow()
		require.NoError(t, err, "the cool-down has passed")
		require.Equal(t, StateHalfOpen, b.State())
		_, err = b.Allow()
		require.ErrorIs(t, err, ErrTooManyProbe, "one probe at a time")
		probe(errDown)
		require.Equal(t, StateOpen, b.State())
		require.Equal(t, pause, changes[len(changes)-1].Pause, "a failed probe doubles the pause, up to MaxCooldown")
	}
	clk.Advance(3 * time.Second)
	report(t, b, nil)
	require.Equal(t, StateClosed, b.State())
	last := changes[len(changes)-1]
	require.Equal(t, Change{Name: "t", From: StateHalfOpen, To: StateClosed}, last)
	require.Equal(t, len(changes), rule.resets, "the rule is reset on every change")

	// Closed again: the next opening starts from Cooldown.
	report(t, b, errDown)
	report(t, b, errDown)
	require.Equal(t, time.Second, changes[len(changes)-1].Pause)
}

// Excluded outcomes say nothing: not counted, and a probe's slot is
// freed. Outcomes of requests allowed before a change of state are
// dropped (gobreaker's generations).
func TestExcludedAndOutdatedOutcomes(t *testing.T) {
	t.Parallel()
	clk := testclock.New()
	errStop := errors.New("stopping")
	b := New(Config{Now: clk.Now, Cooldown: time.Second, Rule: &failN{n: 1},
		IsExcluded: func(err error) bool { return errors.Is(err, errStop) }})
	early, err := b.Allow()
	require.NoError(t, err)
	report(t, b, errStop)
	require.Equal(t, StateClosed, b.State(), "excluded: not a failure")
	report(t, b, errDown)
	require.Equal(t, StateOpen, b.State())
	early(nil) // allowed while closed: outdated
	require.Equal(t, StateOpen, b.State(), "an outdated success does not close the circuit")

	clk.Advance(time.Second)
	probe, err := b.Allow()
	require.NoError(t, err)
	probe(errStop)
	again, err := b.Allow()
	require.NoError(t, err, "an excluded probe frees its slot")
	again(nil)
	require.Equal(t, StateClosed, b.State())
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	b := New(Config{Cooldown: time.Hour, Rule: &failN{n: 1}}) // time.Now, MaxCooldown = Cooldown
	report(t, b, errDown)
	require.Equal(t, StateOpen, b.State())
	require.Equal(t, time.Hour, b.cfg.MaxCooldown)
	_, err := b.Allow()
	require.ErrorIs(t, err, ErrOpen)
}

func TestRoundsCountsOneFailurePerRound(t *testing.T) {
	t.Parallel()
	t0 := testclock.Start
	r := &Rounds{Threshold: 2, MinFailing: time.Second}
	round := r.Round()
	// Three requests of one round fail together: one counted failure.
	for range 3 {
		failed, trip := r.Record(RoundFailure{Round: round}, t0, true)
		require.True(t, failed)
		require.False(t, trip)
	}
	require.Equal(t, round+1, r.Round())
	failed, trip := r.Record(RoundFailure{Round: r.Round()}, t0.Add(500*time.Millisecond), true)
	require.True(t, failed)
	require.False(t, trip, "two rounds, but within MinFailing")
	_, trip = r.Record(RoundFailure{Round: r.Round()}, t0.Add(time.Second), true)
	require.True(t, trip, "three rounds spanning MinFailing")

	// Not closed: a failure, never counted.
	before := r.Round()
	failed, trip = r.Record(RoundFailure{Round: before}, t0, false)
	require.True(t, failed)
	require.False(t, trip)
	require.Equal(t, before, r.Round())

	// Any other outcome is a success and ends the streak.
	failed, _ = r.Record(fmt.Errorf("wrapped: %w", errDown), t0, true)
	require.False(t, failed)
	_, trip = r.Record(RoundFailure{Round: r.Round()}, t0.Add(time.Hour), true)
	require.False(t, trip, "a new streak")
	r.Reset()
	_, trip = r.Record(RoundFailure{Round: r.Round()}, t0.Add(2*time.Hour), true)
	require.False(t, trip, "Reset ends the streak")
	r.EndStreak()
	_, trip = r.Record(RoundFailure{Round: r.Round()}, t0.Add(3*time.Hour), true)
	require.False(t, trip, "EndStreak ends it too")

	off := &Rounds{}
	for range 10 {
		_, trip := off.Record(RoundFailure{Round: off.Round()}, t0, true)
		require.False(t, trip, "Threshold 0 never trips")
	}
}

type keyErr string

func (k keyErr) Error() string      { return "fault on " + string(k) }
func (k keyErr) FailureKey() string { return string(k) }

func TestDistinctKeys(t *testing.T) {
	t.Parallel()
	d := &DistinctKeys{Need: 3}
	for range 10 {
		failed, trip := d.Record(keyErr("poison"), time.Time{}, true)
		require.True(t, failed)
		require.False(t, trip, "one key again and again")
	}
	_, trip := d.Record(fmt.Errorf("wrapped: %w", keyErr("b")), time.Time{}, true)
	require.False(t, trip)
	failed, _ := d.Record(errDown, time.Time{}, true)
	require.False(t, failed, "not keyed: a success")
	d.Record(keyErr("a"), time.Time{}, true)
	d.Record(keyErr("b"), time.Time{}, true)
	d.Reset()
	_, trip = d.Record(keyErr("c"), time.Time{}, true)
	require.False(t, trip, "Reset starts a new run")
	d.Record(keyErr("d"), time.Time{}, true)
	_, trip = d.Record(keyErr("e"), time.Time{}, true)
	require.True(t, trip, "three distinct keys in a row")
}
