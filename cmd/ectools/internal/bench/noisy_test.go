package bench

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/config"
)

// The noisy-neighbour run with --quiet-lane: quiet's producer writes to
// its lane's topic, the center consumes it, every message is forwarded,
// and the report says so.
func TestNoisyQuietLane(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Baselines = false
	cfg.Partitions = 2
	cfg.Producers, cfg.Concurrency = 1, 8
	cfg.DrainTimeout = time.Minute
	cfg.Noisy.FloodMessages = 400
	cfg.Noisy.QuietRate = 100
	cfg.Noisy.QuietAlone = time.Second
	cfg.Noisy.QuietLane = true
	cfg.Noisy.QuietLaneFreshFetchWait = -1
	rep, err := Run(t.Context(), cfg)
	require.NoError(t, err)
	n := rep.Noisy
	require.NotNil(t, n)
	require.Equal(t, cfg.ControlTopic+".lane.quiet", n.QuietLane)
	require.Equal(t, "none", n.QuietLaneFreshFetchWait)
	for _, c := range []CenterResult{n.QuietAlone, n.FloodAlone, n.FloodWithQuiet.Flood, n.FloodWithQuiet.Quiet} {
		require.Zero(t, c.Errors, c.FirstError)
		require.Positive(t, c.Forwarded)
		require.Zero(t, c.Missing)
	}
	// Every quiet message forwarded has a place in line, alone and during
	// the flood.
	require.EqualValues(t, n.QuietAlone.Forwarded, n.QuietPlaceAlone.Count)
	require.EqualValues(t, n.FloodWithQuiet.Quiet.Forwarded, n.QuietPlaceDuring.Count)
	require.LessOrEqual(t, n.QuietPlaceDuring.P50, n.QuietPlaceDuring.P99)
	require.LessOrEqual(t, n.QuietPlaceDuring.Max, n.FloodMessages)
	require.Equal(t, 1000, n.ClaimLimit)
	var table bytes.Buffer
	require.NoError(t, rep.WriteNoisyTable(&table))
	require.Contains(t, table.String(), "place in line during the flood")
	require.Contains(t, table.String(), "quiet on its own control lane "+cfg.ControlTopic+".lane.quiet")
}

// --flood-rate and --flood-max-in-flight give the flood a forward.biz
// entry of the embedded center (nothing without them); negative values
// are refused, each by its flag.
func TestNoisyFloodLimits(t *testing.T) {
	t.Parallel()
	n := DefaultNoisy()
	n.FloodMessages = 100
	var cfg config.Config
	n.center(&cfg)
	require.Empty(t, cfg.Forward.Biz)
	n.FloodMaxInFlight = 1000
	n.center(&cfg)
	require.Equal(t, []config.ForwardBiz{{BizID: floodBizID, MaxInFlight: 1000}}, cfg.Forward.Biz)

	for flag, edit := range map[string]func(*Noisy){
		"flood-max-in-flight": func(n *Noisy) { n.FloodMaxInFlight = -1 },
		"flood-rate":          func(n *Noisy) { n.FloodRate = -1 },
	} {
		c := Default()
		c.Noisy.FloodMessages = 100
		require.NoError(t, c.Validate())
		edit(&c.Noisy)
		require.ErrorContains(t, c.Validate(), flag+": must not be negative")
	}
}

func TestSchedLatencySince(t *testing.T) {
	t.Parallel()
	from := readSchedLatency()
	require.NotNil(t, from)
	// Busy goroutines, more than the cores, make others wait.
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				runtime.Gosched()
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	s := schedLatencySince(from)
	require.NotNil(t, s)
	require.Positive(t, s.Count)
	require.LessOrEqual(t, s.P50Ms, s.P99Ms)
	require.LessOrEqual(t, s.P99Ms, s.P999Ms)
	require.Nil(t, schedLatencySince(nil))
}
