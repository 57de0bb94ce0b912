package verifier

import (
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/state"
)

// 10,000 due PREPAREs behind one slow endpoint: the endpoint never sees
// more than its cap in flight, every message is resolved, and another
// bizID's checks are not held up behind the backlog.
func TestBacklogBehindSlowEndpointRespectsCap(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("10,000 messages; skipped with -short")
	}
	const n, capacity = 10_000, 4
	var inFlight, maxInFlight, served atomic.Int32
	var busy atomic.Int64 // time spent in the handler, summed
	slow := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		cur := inFlight.Add(1)
		defer inFlight.Add(-1)
		raiseTo(&maxInFlight, cur)
		began := time.Now()
		select { // a producer that takes 2ms per answer
		case <-time.After(2 * time.Millisecond):
		case <-r.Context().Done():
		}
		busy.Add(int64(time.Since(began)))
		served.Add(1)
		reply(w, r, checkback.DecisionCommit)
	})
	fast := clientlibProducer(t)
	clk := newRealClock()
	var st testStore = newMemStore(clk.Now)
	if os.Getenv("VERIFIER_STORM_SQLITE") != "" {
		st = openSQLite(t, clk)
	}
	h := startVerifier(t, clk, st, Config{
		Workers: 32, EndpointConcurrency: capacity, BusyDelay: 5 * time.Millisecond, MaxPutOff: 5 * time.Second,
		Allow: []string{slow.endpoint("http", ""), fast.endpoint("http", "")},
	})
	start := time.Now()
	for i := range n {
		h.prepare("slow", fmt.Sprint("k", i), slow.endpoint("http", "/cb"))
	}
	prepared := time.Since(start)
	fastStart := time.Now()
	for i := range 50 {
		h.prepare("fast", fmt.Sprint("c", i), fast.endpoint("http", "/cb"))
	}
	for i := range 50 {
		h.waitStatus("fast", fmt.Sprint("c", i), state.Committed)
	}
	fastDone := time.Since(fastStart)
	// Not behind the backlog: the other bizID's checks were done while
	// the slow endpoint still had most of its calls ahead of it (at 4 at
	// a time and 2ms each they take at least 5s, however fast the
	// machine).
	require.Less(t, served.Load(), int32(n/2), "the other bizID's checks waited behind the backlog")
	// Until every message is resolved, failing only when they stop
	// coming (a starved machine drains the backlog slowly, not never).
	for last, progressed := -1, time.Now(); ; time.Sleep(10 * time.Millisecond) {
		c := h.fwd.count()
		if c == n+50 {
			break
		}
		if c > last {
			last, progressed = c, time.Now()
		}
		require.Less(t, time.Since(progressed), 30*time.Second, "resolutions stopped at %d of %d", c, n+50)
	}
	took := time.Since(start)
	require.LessOrEqual(t, maxInFlight.Load(), int32(capacity), "the endpoint's cap held")
	require.Equal(t, int32(n), served.Load(), "each message called once")
	for i := 0; i < n; i += 997 {
		require.Equal(t, 1, h.get("slow", fmt.Sprint("k", i)).VerifyAttempts, "one call: every put-off gave its claim's attempt back")
	}
	handler := time.Duration(busy.Load())
	t.Logf("%d messages behind one 2ms endpoint (cap %d): prepared in %s, all resolved after %s (%.0f/s); max in flight %d; "+
		"handler time %s (%.2fms per answer), endpoint slots busy %.0f%% of the time; "+
		"%d put-offs; %d claims; 50 checks of another bizID, prepared after the backlog, done in %s",
		n, capacity, prepared.Round(time.Millisecond), took.Round(time.Millisecond), float64(n)/took.Seconds(), maxInFlight.Load(),
		handler.Round(time.Millisecond), float64(handler)/float64(n)/1e6, 100*handler.Seconds()/(capacity*took.Seconds()),
		int(h.total("http", outcomeDeferred)), claimCount(st), fastDone.Round(time.Millisecond))
}

func claimCount(st testStore) int {
	if m, ok := st.(*memStore); ok {
		return m.claimCount()
	}
	return -1
}
