package verifier

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// prepareAll writes PREPAREs for keys straight into the store, in one
// batch, due for check-back at at.
func prepareAll(t *testing.T, st Store, at time.Time, verify string, keys ...string) {
	t.Helper()
	cs := make([]store.Change, len(keys))
	for i, k := range keys {
		cs[i] = store.Change{BizID: "b", Key: k, Event: state.Event{Kind: state.KindPrepare, At: at,
			Body: &state.Body{Payload: []byte("payload"), Topic: "orders", Verify: verify}}}
	}
	_, err := st.Apply(context.Background(), store.ApplyRequest{Changes: cs})
	require.NoError(t, err)
}

// callCounter counts a producer's calls per message key.
type callCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounter) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
}

func (c *callCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// One producer answers a handful of keys with garbage (HTML, a wrong
// shape, an empty body, 404) and one key with HTTP 500, again and again,
// and commits 1,000 others. The garbage keys are claimed first, so they
// are called back to back. None of it is the endpoint failing: the circuit
// never opens and the 1,000 good messages are answered at once (were the
// circuit to open on such answers, each half-open probe could pick
// another bad key, and good answers would wait minutes).
func TestPoisonedKeysDoNotPauseTheirEndpoint(t *testing.T) {
	t.Parallel()
	const good = 1000
	poison := map[string]http.HandlerFunc{
		"x-html":  answering(200, "text/html", "<html><body>Internal error</body></html>"),
		"x-shape": answering(200, "application/json", `{"ok":true}`),
		"x-empty": answering(200, "", ""),
		"x-404":   answering(404, "text/plain", "no such order"),
		"x-500":   answering(500, "text/plain", "NullPointerException"),
	}
	var calls callCounter
	p := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("messageKey")
		calls.add(key)
		if h, ok := poison[key]; ok {
			h(w, r)
			return
		}
		reply(w, r, checkback.DecisionCommit)
	})
	clk := newRealClock()
	st := newMemStore(clk.Now)
	h := startVerifier(t, clk, st, Config{
		Allow:   []string{p.endpoint("http", "")},
		Workers: 8, EndpointConcurrency: 4,
		// A circuit that opened would stay open for the whole test.
		BreakerFailures: 3, BreakerCoolDown: time.Hour,
		Policy: Policy{BackoffBase: 5 * time.Millisecond, BackoffCap: 20 * time.Millisecond, MaxAttempts: 100_000},
	})
	start := time.Now()
	var bad []string
	for k := range poison {
		bad = append(bad, k)
	}
	prepareAll(t, st, start.Add(-time.Second), p.endpoint("http", "/cb"), bad...) // due first
	keys := make([]string, good)
	for i := range keys {
		keys[i] = fmt.Sprint("c", i)
	}
	prepareAll(t, st, start, p.endpoint("http", "/cb"), keys...)

	require.Eventually(t, func() bool { return h.fwd.count() == good }, 30*time.Second, 5*time.Millisecond,
		"the good messages are answered while the bad keys keep failing")
	took := time.Since(start)
	for k := range poison {
		require.Eventually(t, func() bool { return calls.get(k) >= 5 }, 10*time.Second, time.Millisecond,
			"%s retried on its own backoff", k)
	}
	t.Logf("%d good messages committed in %s next to %d bad keys (x-500 called %d times)", good, took.Round(time.Millisecond), len(poison), calls.get("x-500"))
	require.Zero(t, testutil.ToFloat64(h.v.m.circuitOpen), "the circuit never opened")
	g := h.v.gates.get(strings.TrimPrefix(p.srv.URL, "http://"))
	require.Equal(t, "closed", g.breaker.State().String())
	for _, k := range keys {
		require.Equal(t, 1, calls.get(k), "%s called once", k)
	}
	for k := range poison {
		m := h.get("b", k)
		require.Equal(t, state.Prepared, m.Status, k)
		require.NotEmpty(t, m.LastError, k)
	}
}

// A really dead endpoint (connection refused, calls timing out, 5xx for
// every key) still opens the circuit after BreakerFailures keys: the rest
// of its messages are put off by the cool-down without a call and without
// burning an attempt.
func TestDeadEndpointStillOpensTheCircuit(t *testing.T) {
	t.Parallel()
	const n, failures, concurrency = 20, 5, 2
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc // nil: connection refused
		timeout time.Duration
	}{
		{name: "connection refused"},
		{name: "503 for every key", handler: answering(503, "text/plain", "Service Unavailable")},
		{name: "502 from a proxy", handler: answering(502, "text/html", "<html>Bad Gateway</html>")},
		{name: "no answer in time", handler: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, timeout: 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				tc.handler(w, r)
			}))
			if tc.handler == nil {
				srv.Close() // connection refused from now on
			} else {
				t.Cleanup(srv.Close)
			}
			clk := newClock() // failed messages are not due again
			st := newMemStore(clk.Now)
			h := startVerifier(t, clk, st, Config{
				Allow:   []string{srv.URL},
				Workers: 4, EndpointConcurrency: concurrency,
				BreakerFailures: failures, BreakerCoolDown: time.Hour,
				Policy: Policy{Timeout: tc.timeout, BackoffBase: time.Second, BackoffCap: time.Second, Jitter: JitterNone, JitterSet: true},
			})
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprint("k", i)
			}
			prepareAll(t, st, clk.Now(), srv.URL+"/cb", keys...)
			require.Eventually(t, func() bool { return testutil.ToFloat64(h.v.m.circuitOpen) == 1 }, 10*time.Second, time.Millisecond)
			failed, putOff := 0, 0
			require.Eventually(t, func() bool {
				failed, putOff = 0, 0
				for _, k := range keys {
					m := h.get("b", k)
					switch {
					case m.VerifyNextAt.After(clk.Now().Add(time.Hour - time.Second)):
						putOff++
						require.Zero(t, m.VerifyAttempts, "%s: put off without burning an attempt", k)
					case m.LastError != "" && m.VerifyNextAt.Equal(clk.Now().Add(time.Second)):
						failed++
					}
				}
				return failed+putOff == n
			}, 10*time.Second, 5*time.Millisecond)
			require.GreaterOrEqual(t, failed, failures)
			require.LessOrEqual(t, failed, failures+concurrency, "calls in flight when it opened, no more")
			if tc.handler != nil {
				require.Equal(t, int32(failed), calls.Load(), "no call while open")
			}
		})
	}
}

// While the circuit is half-open, its one probe goes to a message never
// called before rather than to one that failed: the keys that keep failing
// come back first (they were due first) but are held, the new message's
// answer closes the circuit.
func TestHalfOpenProbePrefersAMessageNotCalledBefore(t *testing.T) {
	t.Parallel()
	var calls callCounter
	p := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("messageKey")
		calls.add(key)
		if strings.HasPrefix(key, "old") {
			http.Error(w, "down for this key", http.StatusServiceUnavailable)
			return
		}
		reply(w, r, checkback.DecisionCommit)
	})
	// Wall clock (gobreaker): the cool-down passes for real; the probe
	// grace is half of it.
	const coolDown = 3 * time.Second
	clk := newClock()
	st := newMemStore(clk.Now)
	h := startVerifier(t, clk, st, Config{
		Allow:           []string{p.endpoint("http", "")},
		BreakerFailures: 3, BreakerCoolDown: coolDown,
		Policy: Policy{BackoffBase: time.Second, BackoffCap: time.Second, Jitter: JitterNone, JitterSet: true},
	})
	prepareAll(t, st, clk.Now(), p.endpoint("http", "/cb"), "old0", "old1", "old2")
	require.Eventually(t, func() bool { return testutil.ToFloat64(h.v.m.circuitOpen) == 1 }, 10*time.Second, time.Millisecond)
	g := h.v.gates.get(strings.TrimPrefix(p.srv.URL, "http://"))
	require.Eventually(t, func() bool { return g.breaker.State().String() == "half-open" }, 3*coolDown, time.Millisecond)
	// The failed keys come due again, before a new message.
	clk.Advance(time.Second)
	prepareAll(t, st, clk.Now(), p.endpoint("http", "/cb"), "new")
	m := h.waitStatus("b", "new", state.Committed)
	require.Equal(t, 1, m.VerifyAttempts)
	require.Zero(t, testutil.ToFloat64(h.v.m.circuitOpen), "the new message's probe closed the circuit")
	for _, k := range []string{"old0", "old1", "old2"} {
		require.Equal(t, 1, calls.get(k), "%s not called while half-open", k)
		m := h.get("b", k)
		require.Equal(t, state.Prepared, m.Status)
		require.Equal(t, 1, m.VerifyAttempts, "%s: held without burning an attempt", k)
	}
}
