package clientlib_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/clientlib/kafkaauth"
	"github.com/eventcenter/eventcenter/clientlib/kafkaauth/kafkaauthtest"
)

// TestProducerTLSAndSASL sends through a kfake cluster with TLS and SCRAM,
// configured with WithTLS + WithSASL and with WithKafkaAuth; a wrong
// password fails Ping within its bound.
func TestProducerTLSAndSASL(t *testing.T) {
	t.Parallel()
	p := kafkaauthtest.New(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, clientlib.DefaultControlTopic),
		kfake.TLS(p.ServerTLS(false)), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "producer", "pw-1234"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	pem, err := os.ReadFile(p.CAFile)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(pem))

	send := func(opts ...clientlib.Option) error {
		pr, err := clientlib.NewProducer(append([]clientlib.Option{clientlib.WithBrokers(c.ListenAddrs()...)}, opts...)...)
		require.NoError(t, err)
		defer pr.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if err := pr.Ping(ctx); err != nil {
			return err
		}
		return pr.Prepare(ctx, clientlib.Message{BizID: "b", Key: "k", ForwardTopic: "t", Payload: []byte("x")})
	}
	require.NoError(t, send(clientlib.WithTLS(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}),
		clientlib.WithSASL(scram.Auth{User: "producer", Pass: "pw-1234"}.AsSha512Mechanism())))
	require.NoError(t, send(clientlib.WithKafkaAuth(kafkaauth.Config{TLS: kafkaauth.TLS{CAFile: p.CAFile},
		SASL: kafkaauth.SASL{Mechanism: "SCRAM-SHA-512", Username: "producer", Password: "pw-1234"}})))
	err = send(clientlib.WithKafkaAuth(kafkaauth.Config{TLS: kafkaauth.TLS{CAFile: p.CAFile},
		SASL: kafkaauth.SASL{Mechanism: "SCRAM-SHA-512", Username: "producer", Password: "wrong"}}))
	require.ErrorContains(t, err, "ping kafka")
	require.ErrorContains(t, send(), "TLS")

	_, err = clientlib.NewProducer(clientlib.WithBrokers("x:1"), clientlib.WithKafkaAuth(kafkaauth.Config{SASL: kafkaauth.SASL{Mechanism: "NOPE"}}))
	require.ErrorContains(t, err, "WithKafkaAuth: sasl.mechanism")
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	require.NoError(t, err)
	defer cl.Close()
	_, err = clientlib.NewProducer(clientlib.WithClient(cl), clientlib.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12}))
	require.ErrorContains(t, err, "WithClient")
}
