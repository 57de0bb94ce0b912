package verifier

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
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

// Endpoints are parsed once and named as Endpoint.String names them; a
// bad one stays bad; the cache starts over when full.
func TestParsedEndpointCache(t *testing.T) {
	t.Parallel()
	v := &Verifier{parsed: map[string]parsed{}}
	ep, err := v.parse("http://h:8080/cb?x=1")
	require.NoError(t, err)
	require.Equal(t, "h:8080", ep.Host)
	require.Equal(t, ep.String(), v.name(ep))
	again, err := v.parse("http://h:8080/cb?x=1")
	require.NoError(t, err)
	require.Equal(t, ep, again)
	for range 2 {
		_, err = v.parse("http://user:secret@h:8080/cb")
		require.ErrorContains(t, err, "credentials", "a bad endpoint stays bad from the cache")
		require.NotContains(t, err.Error(), "secret")
	}
	for i := range maxParsed + 10 {
		_, _ = v.parse(fmt.Sprintf("http://h%d/cb", i))
	}
	require.LessOrEqual(t, len(v.parsed), maxParsed)
	require.Equal(t, "http://h1/cb", v.name(checkback.Endpoint{Raw: "http://h1/cb"}), "not parsed here: named by String")
}
