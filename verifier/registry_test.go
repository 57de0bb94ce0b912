package verifier

import (
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/verifier/resolver"
)

// stubResolver answers Providers with fixed direct endpoints (or an error).
type stubResolver struct {
	mu    sync.Mutex
	provs []resolver.Provider
	err   error
	calls int
}

func (s *stubResolver) set(t *testing.T, err error, eps ...string) {
	t.Helper()
	var provs []resolver.Provider
	for _, raw := range eps {
		w := 1
		if i := strings.LastIndex(raw, " w="); i >= 0 {
			w = 0
			for _, c := range raw[i+3:] {
				w = w*10 + int(c-'0')
			}
			raw = raw[:i]
		}
		ep, perr := checkback.ParseEndpoint(raw)
		require.NoError(t, perr)
		provs = append(provs, resolver.Provider{Endpoint: ep, Weight: w})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.provs, s.err = provs, err
}

func (s *stubResolver) Providers(_ context.Context, ep checkback.Endpoint) ([]resolver.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if ep.Protocol != checkback.ProtoRegistry {
		return nil, context.Canceled
	}
	return s.provs, s.err
}

func (s *stubResolver) called() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// deadAddr is a host:port that refuses connections.
func deadAddr(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(nil)
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	return addr
}

const regEP = "zookeeper://zk1:2181/com.example.TxChecker?bizid=int"

func registryVerifier(t *testing.T, clk *clock, res Resolver, allow ...string) *harness {
	t.Helper()
	return startVerifier(t, clk, openSQLite(t, clk), Config{
		Policy:   testPolicy,
		Resolver: res,
		// Always the same draw: the weights alone decide the order.
		Rand:   func() float64 { return 0.5 },
		BizIDs: map[string]BizConfig{"1001": {Allow: allow}},
	})
}

func (h *harness) registryTotal(outcome string) float64 {
	return h.registryTotalOf("zk1:2181", outcome)
}

// A provider that refuses the connection is skipped for the next one
// within the same attempt: the message is decided at its first attempt.
func TestRegistryCheckbackSkipsAProviderThatRefuses(t *testing.T) {
	t.Parallel()
	p := clientlibProducer(t)
	dead := deadAddr(t)
	res := &stubResolver{}
	// The dead provider weighs more: with the same draw it comes first.
	res.set(t, nil, "tri://"+dead+"/com.example.TxChecker/verifyMessage?bizid=int w=100", p.endpoint("tri", "/com.example.TxChecker/verifyMessage?bizid=int w=1"))
	clk := newClock()
	h := registryVerifier(t, clk, res, "zookeeper://zk1:2181", "tri://"+dead, p.endpoint("tri", ""))
	h.prepare("1001", "c-1", regEP)
	h.prepare("1001", "r-1", regEP)
	m := h.waitStatus("1001", "c-1", state.Committed)
	require.Equal(t, 1, m.VerifyAttempts, "decided at the first attempt")
	h.waitStatus("1001", "r-1", state.RolledBack)
	require.Len(t, p.requests(), 2)
	require.Equal(t, 2.0, testutil.ToFloat64(h.v.m.providerSkipped.WithLabelValues("zk1:2181")))
	require.Equal(t, 1.0, h.registryTotal(outcomeCommit))
	require.Equal(t, 1.0, h.registryTotal(outcomeRollback))
	require.Equal(t, 1.0, h.total("registry", outcomeCommit))
}

// Every provider down: the attempt fails with an error that names the
// service, the registry and each provider, and backs off; nothing is
// decided.
func TestRegistryCheckbackEveryProviderDown(t *testing.T) {
	t.Parallel()
	d1, d2 := deadAddr(t), deadAddr(t)
	res := &stubResolver{}
	res.set(t, nil, "tri://"+d1+"/com.example.TxChecker/verifyMessage", "jsonrpc://"+d2+"/com.example.TxChecker")
	clk := newClock()
	h := registryVerifier(t, clk, res, "zookeeper://zk1:2181", "tri://"+d1, "jsonrpc://"+d2)
	t0 := clk.Now()
	h.prepare("1001", "c-1", regEP)
	m := h.waitAttempts("1001", "c-1", 1)
	require.Equal(t, state.Prepared, m.Status)
	require.Equal(t, t0.Add(time.Second), m.VerifyNextAt, "backs off like an unreachable endpoint")
	require.Contains(t, m.LastError, "via zookeeper://zk1:2181/com.example.TxChecker")
	require.Contains(t, m.LastError, d1)
	require.Contains(t, m.LastError, d2)
	require.Equal(t, 1.0, h.registryTotal(outcomeError))
}

// No provider in the registry: the attempt fails with the resolver's
// reason (service and registry) and backs off; the message is not parked
// and never decided.
func TestRegistryCheckbackNoProvider(t *testing.T) {
	t.Parallel()
	p := clientlibProducer(t)
	res := &stubResolver{}
	res.set(t, &resolver.NoProviderError{Service: "com.example.TxChecker", Registry: "zk1:2181",
		Reason: `no provider of com.example.TxChecker (version "", group "") in registry zookeeper://zk1:2181`})
	clk := newClock()
	h := registryVerifier(t, clk, res, "zookeeper://zk1:2181", p.endpoint("tri", ""))
	h.prepare("1001", "c-1", regEP)
	m := h.waitAttempts("1001", "c-1", 1)
	require.Equal(t, state.Prepared, m.Status)
	require.Contains(t, m.LastError, "no provider of com.example.TxChecker")
	require.Contains(t, m.LastError, "registry zookeeper://zk1:2181")
	require.Equal(t, 1.0, h.registryTotal(outcomeNoProvider))
	require.Empty(t, p.requests())

	// The provider registers: the next attempt, after the backoff, is
	// answered.
	res.set(t, nil, p.endpoint("tri", "/com.example.TxChecker/verifyMessage?bizid=int"))
	clk.Advance(time.Second)
	m = h.waitStatus("1001", "c-1", state.Committed)
	require.Equal(t, 2, m.VerifyAttempts)
}

// A registry not on the bizID's allow list is never asked: parked
// VERIFY_FAILED with the reason, as a disallowed endpoint; so is one whose
// backup server is not on it, and one whose providers are not.
func TestRegistryNotAllowed(t *testing.T) {
	t.Parallel()
	p := clientlibProducer(t)
	res := &stubResolver{}
	res.set(t, nil, p.endpoint("tri", "/com.example.TxChecker/verifyMessage"))
	clk := newClock()
	h := registryVerifier(t, clk, res, "zookeeper://zk1:2181", "tri://10.9.9.9:50051")
	h.prepare("1001", "k-other", "zookeeper://zk9:2181/com.example.TxChecker")
	h.prepare("1001", "k-backup", "zookeeper://zk1:2181/com.example.TxChecker?backup=zk9:2181")
	m := h.waitStatus("1001", "k-other", state.VerifyFailed)
	require.Contains(t, m.LastError, "check-back registry zookeeper://zk9:2181/com.example.TxChecker (servers zk9:2181) is not allowed for bizID \"1001\"")
	m = h.waitStatus("1001", "k-backup", state.VerifyFailed)
	require.Contains(t, m.LastError, "servers zk1:2181,zk9:2181) is not allowed")
	require.Equal(t, 0, res.called(), "a registry not allowed is never looked up")

	h.prepare("1001", "c-provider", "zookeeper://zk1:2181/com.example.TxChecker")
	m = h.waitStatus("1001", "c-provider", state.VerifyFailed)
	require.Contains(t, m.LastError, "the providers of com.example.TxChecker in registry zookeeper://zk1:2181 ("+p.endpoint("tri", "")+") are not allowed for bizID \"1001\"")
	require.Empty(t, p.requests(), "a provider not allowed is never called")
	require.Equal(t, 3.0, testutil.ToFloat64(h.v.m.disallowed))
	require.Equal(t, 1.0, h.registryTotal(outcomeParked))
}

// Providers whose addresses move are allowed by their network: the
// registry's origin plus tri://[127.0.0.0/8]:<port> lets the provider
// found at 127.0.0.1 answer, and skips one outside the network; a service
// whose providers are all outside it parks with the reason, never called.
func TestRegistryProvidersAllowedByNetwork(t *testing.T) {
	t.Parallel()
	p := clientlibProducer(t)
	_, port, err := net.SplitHostPort(strings.TrimPrefix(p.endpoint("", ""), "://"))
	require.NoError(t, err)
	res := &stubResolver{}
	// The outside provider weighs more: it would come first if allowed.
	res.set(t, nil, "tri://10.9.9.9:"+port+"/com.example.TxChecker/verifyMessage?bizid=int w=100",
		p.endpoint("tri", "/com.example.TxChecker/verifyMessage?bizid=int w=1"))
	clk := newClock()
	h := registryVerifier(t, clk, res, "zookeeper://zk1:2181", "tri://[127.0.0.0/8]:"+port)
	h.prepare("1001", "c-1", regEP)
	m := h.waitStatus("1001", "c-1", state.Committed)
	require.Equal(t, 1, m.VerifyAttempts)
	require.Len(t, p.requests(), 1)
	require.Zero(t, testutil.ToFloat64(h.v.m.providerSkipped.WithLabelValues("zk1:2181")), "the outside provider was never tried")

	outside := &stubResolver{}
	outside.set(t, nil, p.endpoint("tri", "/com.example.TxChecker/verifyMessage?bizid=int"))
	h = registryVerifier(t, newClock(), outside, "zookeeper://zk1:2181", "tri://[10.0.0.0/8]:"+port)
	h.prepare("1001", "c-2", regEP)
	m = h.waitStatus("1001", "c-2", state.VerifyFailed)
	require.Contains(t, m.LastError, "the providers of com.example.TxChecker in registry zookeeper://zk1:2181 ("+p.endpoint("tri", "")+") are not allowed for bizID \"1001\": add their origins (or their network, tri://[10.0.0.0/8])")
	require.Len(t, p.requests(), 1, "a provider outside the network is never called")
}
