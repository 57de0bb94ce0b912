package clients

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// scriptedAPI answers each path with the given statuses in turn (the last
// one repeats) and counts the requests per path.
type scriptedAPI struct {
	mu      sync.Mutex
	answers map[string][]int
	calls   map[string]int
	queries []string // "path?query" of every request
}

func (s *scriptedAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := s.calls[r.URL.Path]
	s.calls[r.URL.Path]++
	s.queries = append(s.queries, r.URL.Path+"?"+r.URL.RawQuery)
	codes := s.answers[r.URL.Path]
	s.mu.Unlock()
	code := http.StatusNotFound
	if len(codes) > 0 {
		code = codes[min(n, len(codes)-1)]
	}
	switch code {
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	case http.StatusTooManyRequests:
		// No Retry-After: the client must not guess.
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if code == http.StatusAccepted {
		_, _ = w.Write([]byte(`{"partition":0,"offset":7}`))
		return
	}
	_, _ = w.Write([]byte(`{"error":"scripted ` + http.StatusText(code) + `"}`))
}

// The clients retry 503 (waiting Retry-After, capped by their max wait),
// give up after their retries, and never retry a 4xx or a 429 that gives
// no Retry-After. Each outcome is printed by the client as one line.
func TestClientsRetryOnlyWhatMayBeRetried(t *testing.T) {
	t.Parallel()
	// Each driver gets the client's folder and the API's URL as its last
	// two arguments.
	drivers := map[string][]string{
		"python": {needTool(t, "python3"), "-c", `
import sys
sys.path.insert(0, sys.argv[1])
import eventcenter as ec
c = ec.Client(sys.argv[2], retries=3, max_wait=0.05)
def run(name, f):
    try:
        r = f()
        print(name, "ok", r["offset"])
    except ec.ApiError as e:
        print(name, "error", e.status)
run("flaky", lambda: c.commit("b", "flaky"))
run("busy", lambda: c.commit("b", "busy"))
run("limited", lambda: c.rollback("b", "limited"))
run("bad", lambda: c.commit("b", "bad"))
`},
		"node": {needTool(t, "node"), "--input-type=module", "-e", `
const { Client, ApiError } = await import(process.argv[1] + '/eventcenter.mjs');
const c = new Client(process.argv[2], { retries: 3, maxWaitMs: 50 });
async function run(name, f) {
  try {
    const r = await f();
    console.log(name, 'ok', r.offset);
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    console.log(name, 'error', e.status);
  }
}
await run('flaky', () => c.commit('b', 'flaky'));
await run('busy', () => c.commit('b', 'busy'));
await run('limited', () => c.rollback('b', 'limited'));
await run('bad', () => c.commit('b', 'bad'));
`},
	}
	for lang, argv := range drivers {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			api := &scriptedAPI{calls: map[string]int{}, answers: map[string][]int{
				"/v1/messages/b/flaky/commit":     {503, 503, 202},
				"/v1/messages/b/busy/commit":      {503},
				"/v1/messages/b/limited/rollback": {429, 202},
				"/v1/messages/b/bad/commit":       {400, 202},
			}}
			srv := httptest.NewServer(api)
			defer srv.Close()
			dir, err := filepath.Abs(lang)
			require.NoError(t, err)
			args := append(append([]string(nil), argv[1:]...), dir, srv.URL)
			cmd := exec.CommandContext(t.Context(), argv[0], args...)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Equal(t, "flaky ok 7\nbusy error 503\nlimited error 429\nbad error 400\n", strings.ReplaceAll(string(out), "\r", ""))
			api.mu.Lock()
			defer api.mu.Unlock()
			require.Equal(t, map[string]int{
				"/v1/messages/b/flaky/commit":     3, // two 503s retried
				"/v1/messages/b/busy/commit":      4, // the first try and three retries
				"/v1/messages/b/limited/rollback": 1, // a 429 without Retry-After is not retried
				"/v1/messages/b/bad/commit":       1, // a 4xx is final
			}, api.calls)
		})
	}
}

// transact with an order key names it on the PREPARE and on the COMMIT (so
// that the COMMIT reaches the PREPARE's control partition), and on the
// ROLLBACK when the local transaction fails.
func TestClientsSendTheOrderKeyWithEveryEnvelope(t *testing.T) {
	t.Parallel()
	drivers := map[string][]string{
		"python": {needTool(t, "python3"), "-c", `
import sys
sys.path.insert(0, sys.argv[1])
import eventcenter as ec
c = ec.Client(sys.argv[2], retries=0)
c.transact("b", "k1", "p", "t", lambda: 1, order_key="cust-7")
def fail():
    raise RuntimeError("local transaction failed")
try:
    c.transact("b", "k2", "p", "t", fail, order_key="cust-7")
except RuntimeError:
    pass
`},
		"node": {needTool(t, "node"), "--input-type=module", "-e", `
const { Client } = await import(process.argv[1] + '/eventcenter.mjs');
const c = new Client(process.argv[2], { retries: 0 });
await c.transact('b', 'k1', 'p', 't', async () => 1, { orderKey: 'cust-7' });
await c.transact('b', 'k2', 'p', 't', async () => { throw new Error('local transaction failed'); }, { orderKey: 'cust-7' })
  .catch((e) => { if (e.message !== 'local transaction failed') throw e; });
`},
	}
	for lang, argv := range drivers {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			api := &scriptedAPI{calls: map[string]int{}, answers: map[string][]int{
				"/v1/messages/b/k1/prepare": {202}, "/v1/messages/b/k1/commit": {202},
				"/v1/messages/b/k2/prepare": {202}, "/v1/messages/b/k2/rollback": {202},
			}}
			srv := httptest.NewServer(api)
			defer srv.Close()
			dir, err := filepath.Abs(lang)
			require.NoError(t, err)
			args := append(append([]string(nil), argv[1:]...), dir, srv.URL)
			out, err := exec.CommandContext(t.Context(), argv[0], args...).CombinedOutput()
			require.NoError(t, err, "%s", out)
			api.mu.Lock()
			defer api.mu.Unlock()
			require.Equal(t, []string{
				"/v1/messages/b/k1/prepare?ec-topic=t&ec-order-key=cust-7",
				"/v1/messages/b/k1/commit?ec-order-key=cust-7",
				"/v1/messages/b/k2/prepare?ec-topic=t&ec-order-key=cust-7",
				"/v1/messages/b/k2/rollback?ec-order-key=cust-7",
			}, api.queries)
		})
	}
}
