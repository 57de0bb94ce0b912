package verifier

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
)

func TestDueTimesKeepWhatIsAheadEarliestFirst(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	d := newDueTimes()
	defer d.stop()
	at := func(ms int) time.Time { return now.Add(time.Duration(ms) * time.Millisecond) }

	require.False(t, d.add([]time.Time{at(300), at(100), at(200), at(100)}, now))
	require.Equal(t, []time.Time{at(100), at(200), at(300)}, d.at, "sorted, each once")
	require.True(t, d.add([]time.Time{at(0), at(-5)}, now), "a time not ahead is due now")
	require.Len(t, d.at, 3, "and is not kept")

	d.claimed(at(200))
	require.Equal(t, []time.Time{at(300)}, d.at, "a claim covers what was due by its time")
	d.claimed(at(400))
	require.Empty(t, d.at)

	many := make([]time.Time, 2*maxDueHints)
	for i := range many {
		many[i] = at(len(many) - i)
	}
	d.add(many, now)
	require.Len(t, d.at, maxDueHints, "bounded")
	require.Equal(t, at(1), d.at[0], "the earliest are kept")
}

// A PREPARE due while the verifier idles is checked back when DueAt says
// it is due, not at the next poll (an hour away here).
func TestDueAtWakesAnIdleVerifier(t *testing.T) {
	t.Parallel()
	p := clientlibProducer(t)
	clk := newRealClock()
	st := newMemStore(clk.Now)
	h := startVerifier(t, clk, st, Config{Allow: []string{p.endpoint("http", "")}, PollInterval: time.Hour})
	require.Eventually(t, func() bool { return st.claimCount() >= 1 }, 5*time.Second, time.Millisecond, "the first claim")
	claims := st.claimCount()

	h.prepareIn(0, "b", "c-told", p.endpoint("http", "/"))
	h.prepareIn(0, "b", "c-also-due", p.endpoint("http", "/"))
	h.v.DueAt(clk.Now().Add(50 * time.Millisecond))
	h.waitStatus("b", "c-told", state.Committed)
	require.Greater(t, st.claimCount(), claims)
	// Both were due by then: one claim took both.
	require.Equal(t, state.Committed, h.waitStatus("b", "c-also-due", state.Committed).Status)
}
