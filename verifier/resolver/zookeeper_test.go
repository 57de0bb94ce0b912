package resolver

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/testsupport/zktest"
)

// startResolver starts a resolver with short timings, stopped at cleanup.
func startResolver(t *testing.T, sessionTimeout time.Duration) (*ZooKeeper, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	z, err := NewZooKeeper(Config{SessionTimeout: sessionTimeout, RetryBase: 20 * time.Millisecond, RetryCap: 200 * time.Millisecond,
		Registerer: reg, Logger: testLog(t)})
	require.NoError(t, err)
	require.NoError(t, z.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, z.Stop(context.Background())) })
	return z, reg
}

// hosts returns the providers' host:port, sorted as given.
func hosts(provs []Provider) []string {
	var out []string
	for _, p := range provs {
		out = append(out, p.Endpoint.Host)
	}
	return out
}

// eventually waits until Providers gives want (host:port, in any order),
// or an error containing wantErr when want is nil.
func eventually(t *testing.T, z *ZooKeeper, ep checkback.Endpoint, wantErr string, want ...string) {
	t.Helper()
	var got []string
	var err error
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		var provs []Provider
		provs, err = z.Providers(ctx, ep)
		got = hosts(provs)
		if want == nil {
			return err != nil && strings.Contains(err.Error(), wantErr)
		}
		return err == nil && sameSet(got, want)
	}, 20*time.Second, 10*time.Millisecond, "want %v (error %q); last %v, %v", want, wantErr, got, err)
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

func triURL(host, iface, extra string) string {
	return fmt.Sprintf("tri://%s/%s?interface=%s&methods=verifyMessage&side=provider%s", host, iface, iface, extra)
}

// The list follows the registry through its watch: providers that
// register and leave, other versions never, a service with none (or not
// registered at all) an error naming it and the registry, and back.
func TestZooKeeperFollowsTheProviders(t *testing.T) {
	t.Parallel()
	zs := zktest.Start(t)
	z, reg := startResolver(t, 2*time.Second)
	iface := "com.shop.Verify"
	ep := mustEP(t, "zookeeper://"+zs.Addr+"/"+iface+"?version=1.0.0")

	eventually(t, z, ep, "no provider of com.shop.Verify (version \"1.0.0\", group \"\") in registry zookeeper://"+zs.Addr)

	a := zktest.Register(t, zs.Addr, triURL("10.0.0.1:50051", iface, "&version=1.0.0"))
	zktest.Register(t, zs.Addr, triURL("10.0.0.9:50051", iface, "&version=2.0.0"))
	eventually(t, z, ep, "", "10.0.0.1:50051")
	b := zktest.Register(t, zs.Addr, fmt.Sprintf("jsonrpc://10.0.0.2:8080/%s?interface=%s&version=1.0.0&weight=50", iface, iface))
	eventually(t, z, ep, "", "10.0.0.1:50051", "10.0.0.2:8080")

	a.Unregister()
	eventually(t, z, ep, "", "10.0.0.2:8080")
	b.Unregister()
	eventually(t, z, ep, "the registry lists only version \"2.0.0\"")
	zktest.Register(t, zs.Addr, triURL("10.0.0.3:50051", iface, "&version=1.0.0"))
	eventually(t, z, ep, "", "10.0.0.3:50051")

	st := z.Status()
	require.Len(t, st, 1)
	require.Equal(t, zs.Addr, st[0].Registry)
	require.True(t, st[0].Connected)
	require.Len(t, st[0].Services, 1)
	require.Equal(t, 2, st[0].Services[0].Providers)
	require.Equal(t, 1.0, valueOf(t, reg, "eventcenter_checkback_registry_connected", zs.Addr))
	require.Equal(t, 2.0, valueOf(t, reg, "eventcenter_checkback_registry_providers", zs.Addr))
}

// valueOf reads one series of a registry metric.
func valueOf(t *testing.T, reg *prometheus.Registry, name, registry string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == registry {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	require.FailNow(t, "no series", "%s{registry=%q}", name, registry)
	return 0
}

// ZooKeeper down: the last list is kept (and said in the status and the
// metric); restarted, the watch goes on and sees what changed.
func TestZooKeeperRestartKeepsTheLastList(t *testing.T) {
	t.Parallel()
	zs := zktest.Start(t)
	z, reg := startResolver(t, 4*time.Second)
	iface := "com.shop.Restart"
	ep := mustEP(t, "zookeeper://"+zs.Addr+"/"+iface)
	zktest.Register(t, zs.Addr, triURL("10.0.1.1:50051", iface, ""))
	eventually(t, z, ep, "", "10.0.1.1:50051")

	zs.Stop()
	require.Eventually(t, func() bool { return !z.Status()[0].Connected }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 0.0, valueOf(t, reg, "eventcenter_checkback_registry_connected", zs.Addr))
	for range 3 {
		provs, err := z.Providers(t.Context(), ep)
		require.NoError(t, err, "the last list while ZooKeeper is down")
		require.Equal(t, []string{"10.0.1.1:50051"}, hosts(provs))
	}

	zs.Restart()
	require.Eventually(t, func() bool { return z.Status()[0].Connected }, 20*time.Second, 10*time.Millisecond, "server log:\n%s", zs.Log())
	zktest.Register(t, zs.Addr, triURL("10.0.1.2:50051", iface, ""))
	eventually(t, z, ep, "", "10.0.1.1:50051", "10.0.1.2:50051")
}

// A session the server expires (the center cut off longer than its
// session timeout): the last list is used meanwhile, the client opens a
// new session, the watches are set again and see what changed while it
// was away; the expiry is counted.
func TestZooKeeperSessionExpiry(t *testing.T) {
	t.Parallel()
	zs := zktest.Start(t)
	proxy := zktest.NewProxy(t, zs.Addr)
	z, reg := startResolver(t, 500*time.Millisecond)
	iface := "com.shop.Expiry"
	ep := mustEP(t, "zookeeper://"+proxy.Addr+"/"+iface)
	p1 := zktest.Register(t, zs.Addr, triURL("10.0.2.1:50051", iface, ""))
	eventually(t, z, ep, "", "10.0.2.1:50051")

	proxy.Cut()
	p1.Unregister()
	zktest.Register(t, zs.Addr, triURL("10.0.2.2:50051", iface, ""))
	// Well past the session timeout: the server expires the session.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		provs, err := z.Providers(t.Context(), ep)
		require.NoError(t, err)
		require.Equal(t, []string{"10.0.2.1:50051"}, hosts(provs), "the last list while cut off")
		time.Sleep(50 * time.Millisecond)
	}
	proxy.Resume(t)
	eventually(t, z, ep, "", "10.0.2.2:50051")
	require.Eventually(t, func() bool { return z.Status()[0].SessionExpiries >= 1 }, 10*time.Second, 10*time.Millisecond)
	require.GreaterOrEqual(t, valueOf(t, reg, "eventcenter_checkback_registry_session_expiries_total", proxy.Addr), 1.0)
}

// A registry nobody answers at: no list was ever read, so the error says
// the registry gave none, naming it and the service.
func TestZooKeeperUnreachable(t *testing.T) {
	t.Parallel()
	z, _ := startResolver(t, time.Second)
	ep := mustEP(t, "zookeeper://127.0.0.1:1/com.shop.Nowhere")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	_, err := z.Providers(ctx, ep)
	require.ErrorIs(t, err, ErrNoProvider)
	require.Contains(t, err.Error(), "zookeeper://127.0.0.1:1")
	require.Contains(t, err.Error(), "com.shop.Nowhere")
	require.False(t, z.Status()[0].Connected)
}

// Providers before Start or after Stop is an error, not a hang.
func TestZooKeeperNotRunning(t *testing.T) {
	t.Parallel()
	z, err := NewZooKeeper(Config{})
	require.NoError(t, err)
	_, err = z.Providers(t.Context(), mustEP(t, "zookeeper://zk/a.B"))
	require.ErrorContains(t, err, "not running")
	_, err = z.Providers(t.Context(), mustEP(t, "tri://h/a.B/m"))
	require.ErrorContains(t, err, "not a registry endpoint")
}

func testLog(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
