package verifier

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
)

// Calls run on a pool of at most Workers goroutines kept for the run, not
// on a goroutine per call: 300 check-backs start no more than 4 workers.
func TestCallsRunOnAPoolOfWorkers(t *testing.T) {
	t.Parallel()
	const n, workers = 300, 4
	p := clientlibProducer(t)
	clk := newRealClock()
	h := startVerifier(t, clk, newMemStore(clk.Now), Config{
		Workers: workers, EndpointConcurrency: workers, Allow: []string{p.endpoint("http", "")},
	})
	for i := range n {
		h.prepare("biz", fmt.Sprint("c", i), p.endpoint("http", "/cb"))
	}
	for i := range n {
		h.waitStatus("biz", fmt.Sprint("c", i), state.Committed)
	}
	require.Eventually(t, func() bool { return h.fwd.count() == n }, time.Minute, 10*time.Millisecond)
	started := h.v.workersStarted.Load()
	require.Positive(t, started)
	require.LessOrEqual(t, started, int64(workers), "a worker serves many calls")
}
