package dubbogo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3"
	_ "dubbo.apache.org/dubbo-go/v3/imports"
	"dubbo.apache.org/dubbo-go/v3/protocol"
	"dubbo.apache.org/dubbo-go/v3/registry"
	"dubbo.apache.org/dubbo-go/v3/server"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/testsupport/zktest"
)

const (
	iface        = "com.shop.TxChecker"
	controlTopic = "eventcenter.control"
	topic        = "orders.events"
)

// TxChecker is a dubbo-go provider of TrustMessage's check-back method:
// keys starting with commit commit, with rollback roll back, others are
// unknown (1).
type TxChecker struct {
	mu    sync.Mutex
	asked map[string]int
}

// VerifyMessage answers 2 (commit), 3 (rollback) or 1 (unknown).
func (c *TxChecker) VerifyMessage(_ context.Context, bizID, key string) (int32, error) {
	c.mu.Lock()
	c.asked[bizID+":"+key]++
	c.mu.Unlock()
	switch {
	case strings.HasPrefix(key, "commit"):
		return 2, nil
	case strings.HasPrefix(key, "rollback"):
		return 3, nil
	}
	return 1, nil
}

func (c *TxChecker) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked[id]
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestDubboGoJSONRPCProviderThroughZooKeeper: a dubbo-go v3 provider
// exports TxChecker over JSON-RPC and registers it (interface-level) in
// ZooKeeper; PREPAREs naming the service by its registry are checked back
// with it and committed, rolled back, or left undecided by its answers.
func TestDubboGoJSONRPCProviderThroughZooKeeper(t *testing.T) {
	zs := zktest.Start(t)
	// A session is served before dubbo-go connects: its first connection
	// gives up early on a server still starting.
	conn := zktest.Connect(t, zs.Addr, 10*time.Second)
	zktest.EnsurePath(t, conn, "/dubbo")
	port := freePort(t)
	checker := &TxChecker{asked: map[string]int{}}
	ins, err := dubbo.NewInstance(dubbo.WithName("txchecker"),
		// As configured by default, it registers weight=0: the center
		// calls such providers when none has a weight, as Dubbo does.
		dubbo.WithRegistry(registry.WithZookeeper(), registry.WithAddress(zs.Addr), registry.WithRegisterInterface(),
			registry.WithTimeout(30*time.Second)),
		dubbo.WithProtocol(protocol.WithJSONRPC(), protocol.WithIp("127.0.0.1"), protocol.WithPort(port)))
	require.NoError(t, err)
	srv, err := ins.NewServer()
	require.NoError(t, err)
	require.NoError(t, srv.RegisterService(checker, server.WithInterface(iface), server.WithVersion("1.0.0")))
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }() // blocks for the process's life once serving

	// The provider's node appears in ZooKeeper.
	require.Eventually(t, func() bool {
		select {
		case err := <-served:
			t.Fatalf("dubbo-go server: %v", err)
		default:
		}
		kids, _, err := conn.Children("/dubbo/" + iface + "/providers")
		return err == nil && len(kids) > 0
	}, time.Minute, 50*time.Millisecond, "the dubbo-go provider never registered")
	kids, _, err := conn.Children("/dubbo/" + iface + "/providers")
	require.NoError(t, err)
	t.Logf("registered: %v", kids)

	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, controlTopic, controlTopic+".dlq", topic))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	cfg := config.Default()
	cfg.Kafka.Brokers = cluster.ListenAddrs()
	cfg.Kafka.ControlTopic = controlTopic
	cfg.Store = config.Store{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "ec.db"), MaxConns: 1, AutoMigrate: true}
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.Admin.Insecure = true
	cfg.Forward.ScanInterval = 100 * time.Millisecond
	cfg.Checkback.FirstDelay = 100 * time.Millisecond
	cfg.Checkback.BackoffBase = 200 * time.Millisecond
	cfg.Checkback.BackoffCap = time.Second
	cfg.Checkback.Allow = []string{"zookeeper://" + zs.Addr, fmt.Sprintf("jsonrpc://[127.0.0.0/8]:%d", port)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c, err := center.New(t.Context(), cfg, center.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Listener: l})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	})

	p, err := clientlib.NewProducer(clientlib.WithBrokers(cluster.ListenAddrs()...), clientlib.WithControlTopic(controlTopic))
	require.NoError(t, err)
	defer p.Close()
	verify := "zookeeper://" + zs.Addr + "/" + iface + "?version=1.0.0&protocol=jsonrpc&method=VerifyMessage&bizid=string"
	for _, key := range []string{"commit-1", "rollback-1", "unknown-1"} {
		require.NoError(t, p.Prepare(t.Context(), clientlib.Message{BizID: "orders", Key: key, Payload: []byte(key),
			ForwardTopic: topic, Verify: verify}))
	}
	for key, want := range map[string]state.Status{"commit-1": state.Committed, "rollback-1": state.RolledBack} {
		require.Eventually(t, func() bool {
			m, err := c.Store.Get(t.Context(), "orders", key)
			return err == nil && m.Status == want
		}, time.Minute, 20*time.Millisecond, "%s never became %s", key, want)
	}
	// Unknown: asked again and again, never decided.
	require.Eventually(t, func() bool { return checker.count("orders:unknown-1") >= 2 }, time.Minute, 20*time.Millisecond)
	m, err := c.Store.Get(t.Context(), "orders", "unknown-1")
	require.NoError(t, err)
	require.Equal(t, state.Prepared, m.Status)
	require.Equal(t, 1, checker.count("orders:commit-1"))
}
