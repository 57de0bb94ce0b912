package center

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib/kafkaauth"
	"github.com/eventcenter/eventcenter/clientlib/kafkaauth/kafkaauthtest"
)

// TestKafkaTLSAndSASL runs a center against a kfake cluster that requires
// mutual TLS and SCRAM: with the right settings it becomes ready; a wrong
// password, an expired client certificate or a plaintext connection fail
// New with an error naming the cluster, promptly.
func TestKafkaTLSAndSASL(t *testing.T) {
	t.Parallel()
	p := kafkaauthtest.New(t)
	const password = "CANARY-kafka-pw-8c1d"
	secure, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "eventcenter.control", "eventcenter.control.dlq"),
		kfake.TLS(p.ServerTLS(true)), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "center", password))
	require.NoError(t, err)
	t.Cleanup(secure.Close)
	cert, key := p.ClientFiles(t, time.Now().Add(time.Hour))
	good := kafkaauth.Config{
		TLS:  kafkaauth.TLS{CAFile: p.CAFile, CertFile: cert, KeyFile: key, ServerName: "localhost"},
		SASL: kafkaauth.SASL{Mechanism: "SCRAM-SHA-256", Username: "center", Password: password},
	}

	t.Run("ready", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig(t, secure.ListenAddrs())
		cfg.Kafka.Auth = good
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		c, err := New(t.Context(), cfg, Options{Logger: quiet(), Listener: l})
		require.NoError(t, err)
		require.NoError(t, c.Start(t.Context()))
		require.Eventually(t, func() bool {
			resp, err := http.Get("http://" + c.Addr() + "/readyz")
			if err != nil {
				return false
			}
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 20*time.Second, 10*time.Millisecond)

		// A bad envelope goes to the dead-letter topic (the DLQ writer)
		// and the admin API reads it back (the DLQ reader), both through
		// TLS and SASL.
		opts, err := good.Options()
		require.NoError(t, err)
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(secure.ListenAddrs()...))...)
		require.NoError(t, err)
		defer cl.Close()
		require.NoError(t, cl.ProduceSync(t.Context(), &kgo.Record{Topic: "eventcenter.control", Key: []byte("b:k"), Value: []byte("{not json")}).FirstErr())
		require.Eventually(t, func() bool {
			resp, err := (&http.Client{Timeout: 8 * time.Second}).Get("http://" + c.Addr() + "/api/v1/dlq")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"key": "b:k"`)
		}, 20*time.Second, 20*time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	})

	expiredCert, expiredKey := p.ClientFiles(t, time.Now().Add(-time.Minute))
	for _, tc := range []struct {
		name string
		edit func(*config.Config)
		want string
	}{
		{"wrong password", func(c *config.Config) { c.Kafka.Auth.SASL.Password = "wrong" }, "kafka (kafka.brokers)"},
		{"expired certificate", func(c *config.Config) {
			c.Kafka.Auth.TLS.CertFile, c.Kafka.Auth.TLS.KeyFile = expiredCert, expiredKey
		}, "expired certificate"},
		{"plaintext to TLS", func(c *config.Config) { c.Kafka.Auth = kafkaauth.Config{} }, "TLS"},
		{"target with its own cluster and a wrong password", func(c *config.Config) {
			bad := good
			bad.SASL.Password = "wrong"
			c.Forward.Targets = append(c.Forward.Targets, config.Target{Name: "other", Type: "kafka", Brokers: secure.ListenAddrs(), Auth: bad})
		}, `forward target "other"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, secure.ListenAddrs())
			cfg.Kafka.Auth = good
			tc.edit(&cfg)
			start := time.Now()
			_, err := New(t.Context(), cfg, Options{Logger: quiet()})
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), password)
			require.Less(t, time.Since(start), kafkaCheckTimeout+5*time.Second)
		})
	}
}

// TestTargetInheritsControlClusterAuth: a Kafka target without brokers of
// its own uses kafka.tls and kafka.sasl.
func TestTargetInheritsControlClusterAuth(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Kafka.Auth.SASL = kafkaauth.SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}
	require.Equal(t, cfg.Kafka.Auth, cfg.TargetAuth(config.Target{Type: "kafka"}))
	require.True(t, cfg.TargetAuth(config.Target{Type: "kafka", Brokers: []string{"other:9092"}}).IsZero())
}
