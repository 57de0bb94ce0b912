package bench

import (
	"context"
	"runtime/pprof"
	"testing"

	"github.com/stretchr/testify/require"
)

// The check-back baseline's CPU is its client's alone: the server's
// goroutines (started under "load", as in a run) are left out. Not
// parallel: the measure needs the process's one CPU profile.
func TestCheckbackBaselineCountsOnlyTheClientsCPU(t *testing.T) {
	cfg := Default()
	cfg.CheckbackListen = "127.0.0.1:0"
	var cb *checkbackServer
	var err error
	pprof.Do(t.Context(), pprof.Labels(profilePart, "load"), func(context.Context) {
		cb, err = startCheckback(cfg)
	})
	require.NoError(t, err)
	defer cb.stop()

	const calls = 5000
	t0, _ := procTicks("self")
	b, err := profiledCheckbackBaseline(t.Context(), cfg, cb.url, calls)
	require.NoError(t, err)
	t1, _ := procTicks("self")
	require.Equal(t, calls, b.Messages)
	require.EqualValues(t, calls, cb.calls.Load())
	processUsPerCall := float64(t1-t0) / clockTicks * 1e6 / calls
	require.Positive(t, b.ClientUsPerCall, "the client's goroutines carry their label")
	require.Less(t, b.ClientUsPerCall, 0.9*processUsPerCall, "the server's CPU is not the client's")
}
