package clientlib

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"
)

// The producer-owned client is configured for the guarantees: acks=all,
// idempotent writes, small linger, and the caller's kgo options last.
func TestOwnedClientConfiguration(t *testing.T) {
	t.Parallel()
	p, err := NewProducer(WithBrokers("127.0.0.1:1"), WithKgoOptions(kgo.ClientID("shop")))
	require.NoError(t, err)
	defer p.Close()
	require.True(t, p.owned)
	require.Equal(t, kgo.AllISRAcks(), p.cl.OptValue(kgo.RequiredAcks))
	require.Equal(t, false, p.cl.OptValue(kgo.DisableIdempotentWrite))
	require.Equal(t, defaultLinger, p.cl.OptValue(kgo.ProducerLinger))
	require.Equal(t, "shop", p.cl.OptValue(kgo.ClientID))
}

// The client logs through franz-go's own slog adapter (plugin/kslog), into
// the producer's logger, not through a hand-written copy.
func TestOwnedClientLogsThroughKslog(t *testing.T) {
	t.Parallel()
	p, err := NewProducer(WithBrokers("127.0.0.1:1"))
	require.NoError(t, err)
	defer p.Close()
	require.IsType(t, &kslog.Logger{}, p.cl.OptValue(kgo.WithLogger))
	// Without WithLogger, franz-go's info lines stay out of the service's
	// default log; warnings still reach it.
	require.Equal(t, kgo.LogLevelWarn, p.cl.OptValue(kgo.WithLogger).(kgo.Logger).Level())

	var buf bytes.Buffer
	q, err := NewProducer(WithBrokers("127.0.0.1:1"), WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	require.NoError(t, err)
	defer q.Close()
	require.Equal(t, kgo.LogLevelDebug, q.cl.OptValue(kgo.WithLogger).(kgo.Logger).Level(), "a logger given is used as it is")
}
