package clientlib

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
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
