package verifier

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/testsupport/zktest"
	"github.com/eventcenter/eventcenter/verifier/resolver"
)

// Check-backs through a real ZooKeeper with providers registered as Dubbo
// registers them (clientlib's handler behind each): decided through Triple
// and JSON-RPC providers; a provider killed mid-run (its node still
// listed) is skipped for the next; all providers gone, the attempt fails
// naming service and registry, and once one is back the next attempt is
// answered; ZooKeeper down, the last list is used.
func TestRegistryCheckbackThroughZooKeeper(t *testing.T) {
	t.Parallel()
	zs := zktest.Start(t)
	res, err := resolver.NewZooKeeper(resolver.Config{SessionTimeout: 4 * time.Second, RetryBase: 20 * time.Millisecond,
		RetryCap: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, res.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, res.Stop(context.Background())) })

	const iface = "com.example.TxChecker"
	a, b, c := clientlibProducer(t), clientlibProducer(t), clientlibProducer(t)
	register := func(p *producer, proto string) *zktest.Provider {
		return zktest.Register(t, zs.Addr, fmt.Sprintf("%s/%s?interface=%s&version=1.0.0&methods=verifyMessage&side=provider",
			p.endpoint(proto, ""), iface, iface))
	}
	ra, rb := register(a, "tri"), register(b, "jsonrpc")
	clk := newClock()
	zkAddr := zs.Addr
	h := startVerifier(t, clk, openSQLite(t, clk), Config{
		Policy:   testPolicy,
		Resolver: res,
		BizIDs: map[string]BizConfig{"1001": {Allow: []string{"zookeeper://" + zkAddr,
			a.endpoint("tri", ""), b.endpoint("jsonrpc", ""), c.endpoint("tri", "")}}},
	})
	ep := "zookeeper://" + zkAddr + "/" + iface + "?version=1.0.0&bizid=int"
	label := strings.ToLower(zkAddr)

	for i := range 8 {
		h.prepare("1001", fmt.Sprintf("c-%d", i), ep)
	}
	h.prepare("1001", "r-0", ep)
	for i := range 8 {
		h.waitStatus("1001", fmt.Sprintf("c-%d", i), state.Committed)
	}
	h.waitStatus("1001", "r-0", state.RolledBack)
	require.NotEmpty(t, a.requests(), "the Triple provider took a share")
	require.NotEmpty(t, b.requests(), "the JSON-RPC provider took a share")

	// A provider killed mid-run; its node stays until its session ends.
	a.srv.Close()
	for i := range 8 {
		h.prepare("1001", fmt.Sprintf("c-killed-%d", i), ep)
	}
	for i := range 8 {
		m := h.waitStatus("1001", fmt.Sprintf("c-killed-%d", i), state.Committed)
		require.Equal(t, 1, m.VerifyAttempts, "the next provider answered within the attempt")
	}

	// All gone: no decision, an error naming service and registry.
	ra.Unregister()
	rb.Unregister()
	require.Eventually(t, func() bool {
		_, err := res.Providers(t.Context(), mustParse(t, ep))
		return err != nil
	}, 10*time.Second, 5*time.Millisecond)
	t0 := clk.Now()
	h.prepare("1001", "c-gone", ep)
	m := h.waitAttempts("1001", "c-gone", 1)
	require.Equal(t, state.Prepared, m.Status)
	require.Equal(t, t0.Add(time.Second), m.VerifyNextAt)
	require.Contains(t, m.LastError, "no provider of "+iface)
	require.Contains(t, m.LastError, "zookeeper://"+zkAddr)
	require.Equal(t, 1.0, h.registryTotalOf(label, outcomeNoProvider))

	// One is back: the next attempt is answered.
	register(c, "tri")
	require.Eventually(t, func() bool {
		_, err := res.Providers(t.Context(), mustParse(t, ep))
		return err == nil
	}, 10*time.Second, 5*time.Millisecond)
	clk.Advance(time.Second)
	m = h.waitStatus("1001", "c-gone", state.Committed)
	require.Equal(t, 2, m.VerifyAttempts)

	// ZooKeeper down: the last list still serves.
	zs.Stop()
	h.prepare("1001", "c-zkdown", ep)
	h.waitStatus("1001", "c-zkdown", state.Committed)
	require.NotEmpty(t, c.requests())
}

func mustParse(t *testing.T, raw string) checkback.Endpoint {
	t.Helper()
	ep, err := checkback.ParseEndpoint(raw)
	require.NoError(t, err)
	return ep
}

func (h *harness) registryTotalOf(registry, outcome string) float64 {
	return testutil.ToFloat64(h.v.m.registryTotal.WithLabelValues(registry, outcome))
}
