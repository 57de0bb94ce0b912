package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The slowest second counts only whole seconds that begin and end with a
// backlog: the stall in the middle, not the drained tail.
func TestSlowestSecondWithABacklog(t *testing.T) {
	t.Parallel()
	sent := []int64{1000, 1000, 0, 0, 0}
	fwd := []int64{900, 800, 100, 1150, 50}
	s, ok := slowestSecond(sent, fwd, 1000)
	require.True(t, ok)
	require.Equal(t, SlowestSecond{At: 2, Forwarded: 100, Sent: 0, Backlog: 300, SecondsBelowHalf: 1}, s)

	_, ok = slowestSecond([]int64{10}, []int64{10}, 10)
	require.False(t, ok, "never a backlog across a whole second")
}
