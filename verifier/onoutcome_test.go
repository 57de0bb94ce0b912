package verifier

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
)

// OnOutcome hears every call's outcome with its endpoint (the console
// counts them per endpoint).
func TestOnOutcomeHearsEveryCall(t *testing.T) {
	t.Parallel()
	p := clientlibProducer(t)
	broken := newProducer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	var mu sync.Mutex
	got := map[string]map[string]int{}
	clk := newClock()
	ep, bad := p.endpoint("http", "/checkback"), broken.endpoint("http", "/checkback")
	h := startVerifier(t, clk, openSQLite(t, clk), Config{
		Policy: testPolicy,
		BizIDs: map[string]BizConfig{"1001": {Allow: []string{p.endpoint("http", ""), broken.endpoint("http", "")}}},
		OnOutcome: func(endpoint, outcome string) {
			mu.Lock()
			defer mu.Unlock()
			if got[endpoint] == nil {
				got[endpoint] = map[string]int{}
			}
			got[endpoint][outcome]++
		},
	})
	for _, k := range []string{"c-1", "c-2", "r-1", "u-1"} {
		h.prepare("1001", k, ep)
	}
	h.prepare("1001", "c-broken", bad)
	h.waitStatus("1001", "c-2", state.Committed)
	h.waitStatus("1001", "r-1", state.RolledBack)
	h.waitAttempts("1001", "u-1", 1)
	h.waitAttempts("1001", "c-broken", 1)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got[bad][outcomeError] == 1
	}, 5*time.Second, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]map[string]int{
		ep:  {outcomeCommit: 2, outcomeRollback: 1, outcomeUnknown: 1},
		bad: {outcomeError: 1},
	}, got)
}
