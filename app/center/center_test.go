package center

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/forwarder/rocketmq"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, rmqtest.LeakOptions()...) }

func testConfig(t *testing.T, brokers []string) config.Config {
	cfg := config.Default()
	cfg.Kafka.Brokers = brokers
	cfg.Store = config.Store{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "ec.db"), MaxConns: 1, AutoMigrate: true}
	cfg.Admin.Insecure = true
	// Never the default 127.0.0.1:8080: tests run in parallel, in several
	// packages at once, and a fixed port makes them fail each other.
	cfg.HTTP.Listen = "127.0.0.1:0"
	return cfg
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startCenter starts a center with opt (on a listener of its own when
// opt.Listener is nil) and stops it at cleanup: register the broker's
// Close with t.Cleanup before calling it, so that the center stops first.
func startCenter(t *testing.T, cfg config.Config, opt Options) *Center {
	t.Helper()
	if opt.Listener == nil {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		opt.Listener = l
	}
	c, err := New(t.Context(), cfg, opt)
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	})
	return c
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, []string{"127.0.0.1:1"})
	cfg.Forward.DefaultTarget = "nope"
	_, err := New(t.Context(), cfg, Options{Logger: quiet()})
	require.ErrorContains(t, err, "forward.default_target")
}

func TestNewFailsOnUnreachablePostgres(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, []string{"127.0.0.1:1"})
	cfg.Store = config.Store{Driver: "postgres", DSN: "postgres://nobody@127.0.0.1:1/x?connect_timeout=1", MaxConns: 1}
	_, err := New(t.Context(), cfg, Options{Logger: quiet()})
	require.ErrorContains(t, err, "connect to postgres")
}

// TestHealthAndReadiness starts a center on kfake and SQLite: /healthz and
// /readyz answer 200 while it runs, and Stop releases everything.
func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "eventcenter.control", "eventcenter.control.dlq"))
	require.NoError(t, err)
	defer cluster.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c, err := New(t.Context(), testConfig(t, cluster.ListenAddrs()), Options{Logger: quiet(), Listener: l})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	for _, path := range []string{"/healthz", "/metrics"} {
		resp, err := http.Get("http://" + c.Addr() + path)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	// Ready once the group has assigned the partitions.
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + c.Addr() + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 10*time.Millisecond)
	require.Len(t, c.Owned.Partitions(), 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, c.Stop(ctx))
	require.Empty(t, c.Owned.Partitions(), "partitions given back on stop")
}

func TestStopTwiceReturns(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "eventcenter.control", "eventcenter.control.dlq"))
	require.NoError(t, err)
	defer cluster.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c, err := New(t.Context(), testConfig(t, cluster.ListenAddrs()), Options{Logger: quiet(), Listener: l})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, c.Stop(ctx))
	require.NoError(t, c.Stop(ctx), "a second Stop returns at once with the first result")
}

// The sizes config validates with are the ones ingest and the targets use:
// a message ingest accepts fits every target's producer.
func TestConfigSizesMatchIngestAndTargets(t *testing.T) {
	require.Equal(t, ingest.RecordOverhead+kafka.RecordFraming, config.RecordOverhead)
	// ingest.max_payload_bytes is bounded by ingest's own limit.
	big := config.Default()
	big.Ingest.MaxPayloadBytes = ingest.MaxMaxPayload + 1
	require.ErrorContains(t, big.Validate(), fmt.Sprintf("ingest.max_payload_bytes: must be 1 to %d, got %d", ingest.MaxMaxPayload, ingest.MaxMaxPayload+1))
	big.Ingest.MaxPayloadBytes = ingest.MaxMaxPayload
	require.NotContains(t, fmt.Sprint(big.Validate()), "ingest.max_payload_bytes:")
	require.Equal(t, rocketmq.DefaultMaxMessageBytes, config.RocketMQMaxMessageBytes)
	d := config.Default()
	require.Equal(t, kafka.DefaultMaxMessageBytes, d.MessageBytes(d.Forward.Targets[0]))
	require.Equal(t, rocketmq.DefaultMaxMessageBytes, d.MessageBytes(config.Target{Type: "rocketmq"}))
}

// A bad configuration is reported by YAML path before the store is opened
// (the DSN points at nothing: a connection attempt would fail instead),
// including what only the components' own checks used to catch.
func TestNewChecksConfigBeforeTheStore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, want string }{
		{"checkback:\n  allow: [\"ftp://h\"]\n", "checkback.allow[0]"},
		{"checkback:\n  biz:\n    - biz_id: a\n      endpoint: tri://h:1/only-interface\n", "checkback.biz[0].endpoint"},
		{"checkback:\n  biz:\n    - biz_id: a\n      force_endpoint: true\n", "checkback.biz[0].force_endpoint"},
		{"checkback:\n  workers: 2\n  endpoint_concurrency: 4\n", "checkback.endpoint_concurrency"},
		{"checkback:\n  biz:\n    - biz_id: a\n      timeout: 5m\n", "checkback.lease"},
		{"kafka:\n  dlq_topic: eventcenter.control\n", "kafka.dlq_topic"},
		{"forward:\n  targets:\n    - name: kafka\n      type: kafka\n    - name: r\n      type: rocketmq\n      name_servers: [\"ns:9876\"]\n", "forward.targets[1].name_servers[0]"},
		{"forward:\n  default_target: nope\n", "forward.default_target"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, []string{"127.0.0.1:1"})
			require.NoError(t, config.Parse([]byte(tc.yaml), &cfg))
			cfg.Store = config.Store{Driver: "postgres", DSN: "postgres://nobody@127.0.0.1:1/x?connect_timeout=1", MaxConns: 1, AutoMigrate: true}
			_, err := New(t.Context(), cfg, Options{Logger: quiet()})
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "postgres", "the store was not tried")
			require.NotRegexp(t, `Config|\b(Allow|BizIDs|Endpoint|ForceEndpoint|EndpointConcurrency|Lease|DLQTopic|NameServers)\b`, err.Error())
		})
	}
}
