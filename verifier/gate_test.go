package verifier

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sony/gobreaker/v2"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// Which outcomes of a call say that the endpoint is failing (and count
// towards its circuit), read from what the caller returns.
func TestEndpointFault(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	_, refused := net.Dial("tcp", addr)
	require.Error(t, refused)
	c := testCaller(t, time.Now)
	refusedCall := doCall(t, c, "http://"+addr+"/cb", "1", "k", nil).Err
	require.Error(t, refusedCall)

	for _, tc := range []struct {
		name  string
		err   error
		fault bool
	}{
		{"answer", nil, false},
		{"unreadable 2xx", fmt.Errorf("%w: not JSON: %q", checkback.ErrUnreadable, "<html>"), false},
		{"JSON-RPC error", errors.New("JSON-RPC error -32000: boom"), false},
		{"404", &statusError{code: 404, body: `"no such order"`}, false},
		{"401", &statusError{code: 401}, false},
		{"redirect", errors.New("call failed: auto redirect is disabled"), false},
		{"500", &statusError{code: 500}, true},
		{"503", &statusError{code: 503}, true},
		{"429", &statusError{code: 429}, true},
		{"timeout", fmt.Errorf("%w within %s", errNoAnswer, time.Second), true},
		{"refused", fmt.Errorf("call failed: %w", refused), true},
		{"refused through the caller", refusedCall, true},
		{"closed early", fmt.Errorf("connection closed before a full answer: %w", io.ErrUnexpectedEOF), true},
	} {
		require.Equal(t, tc.fault, endpointFault(tc.err), tc.name)
		if tc.fault {
			require.ErrorIs(t, faultOf("b:k", tc.err), tc.err, tc.name)
		} else {
			require.NoError(t, faultOf("b:k", tc.err), tc.name)
		}
	}
}

// The circuit counts a run of faults by the distinct keys they hit: one key
// failing again and again never opens it, answers that are not faults end
// the run, and faults on BreakerFailures keys in a row open it.
func TestBreakerCountsFaultsOnDistinctKeys(t *testing.T) {
	t.Parallel()
	m, err := newMetrics(nil)
	require.NoError(t, err)
	gs := &gates{m: map[string]*gate{}, cap: 4, queueCap: 4, failures: 5, coolDown: time.Hour, metrics: m, log: slog.New(slog.DiscardHandler)}
	result := func(g *gate, key string, err error) {
		t.Helper()
		done, aerr := g.breaker.Allow()
		require.NoError(t, aerr)
		done(faultOf(key, err))
	}
	down := &statusError{code: 503}

	g := gs.get("one-key:80")
	for range 50 {
		result(g, "b:poison", down)
	}
	require.Equal(t, gobreaker.StateClosed, g.breaker.State(), "one key failing repeatedly")

	g = gs.get("garbage:80")
	for i := range 50 {
		result(g, fmt.Sprint("b:k", i), fmt.Errorf("%w: not JSON", checkback.ErrUnreadable))
		result(g, fmt.Sprint("b:n", i), &statusError{code: 404})
	}
	require.Equal(t, gobreaker.StateClosed, g.breaker.State(), "prompt answers on many keys")

	g = gs.get("interrupted:80")
	for round := range 10 {
		for i := range 4 {
			result(g, fmt.Sprint("b:", round, "-", i), down)
		}
		result(g, "b:good", nil) // an answer ends the run
	}
	require.Equal(t, gobreaker.StateClosed, g.breaker.State(), "runs of 4 keys with answers between")

	g = gs.get("dead:80")
	for i := range 4 {
		result(g, fmt.Sprint("b:k", i), down)
		result(g, fmt.Sprint("b:k", i), down) // the same keys again do not count twice
	}
	require.Equal(t, gobreaker.StateClosed, g.breaker.State())
	result(g, "b:k4", fmt.Errorf("%w within 5s", errNoAnswer))
	require.Equal(t, gobreaker.StateOpen, g.breaker.State(), "faults on 5 distinct keys in a row")
	require.Equal(t, 1.0, testutil.ToFloat64(m.circuitOpen))
}

// The probe grace: while half-open, a message called before is held for
// the first half of the cool-down, then anything may probe.
func TestHoldForProbe(t *testing.T) {
	t.Parallel()
	g := &gate{probeGrace: 10 * time.Second}
	now := time.Now()
	_, hold := g.holdForProbe(now)
	require.False(t, hold, "closed or open: no hold")
	g.setHalfOpen(now.Add(-4 * time.Second))
	left, hold := g.holdForProbe(now)
	require.True(t, hold)
	require.Equal(t, 6*time.Second, left)
	g.setHalfOpen(now.Add(-11 * time.Second))
	_, hold = g.holdForProbe(now)
	require.False(t, hold, "after the grace any message may probe")
}
