package ingest

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The rule behind Consuming: a fetch answered, or held for fetchSettle,
// since the last failed broker connection; the group's answers for an
// instance owning nothing; requests the client cancelled do not count.
func TestHealthRule(t *testing.T) {
	t.Parallel()
	var h health
	meta := kgo.BrokerMetadata{Host: "10.0.0.1", Port: 9092}
	fetch, hb := kmsg.Fetch.Int16(), kmsg.Heartbeat.Int16()

	ok, why, cause := h.consuming(true)
	require.False(t, ok)
	require.Equal(t, "waiting for a fetch of the control topic to succeed", why)
	require.NoError(t, cause)

	h.OnBrokerRead(meta, fetch, 10, 0, 0, nil)
	ok, _, _ = h.consuming(true)
	require.True(t, ok)

	h.OnBrokerRead(meta, fetch, 0, 0, 0, io.EOF) // the broker went away
	ok, why, cause = h.consuming(true)
	require.False(t, ok)
	require.Contains(t, why, "since a broker connection failed")
	require.ErrorContains(t, cause, "broker 10.0.0.1:9092: EOF")

	h.OnBrokerConnect(meta, 0, nil, nil)
	h.OnBrokerWrite(meta, fetch, 100, 0, 0, nil) // a fetch in flight, not yet held long
	ok, _, _ = h.consuming(true)
	require.False(t, ok)
	h.mu.Lock()
	h.sentAt = time.Now().Add(-fetchSettle) // held for fetchSettle
	h.mu.Unlock()
	ok, _, _ = h.consuming(true)
	require.True(t, ok, "a fetch the broker holds is consumption")

	h.OnBrokerConnect(meta, 0, nil, io.ErrUnexpectedEOF)
	ok, _, _ = h.consuming(true)
	require.False(t, ok, "a failed dial after the fetch was sent")

	h.OnBrokerRead(meta, fetch, 0, 0, 0, context.Canceled) // a rebalance cut it
	h.OnBrokerRead(meta, hb, 10, 0, 0, nil)
	ok, _, _ = h.consuming(true)
	require.False(t, ok, "a heartbeat is no fetch")
	ok, _, _ = h.consuming(false)
	require.True(t, ok, "owning nothing, the group's answer is enough")

	h.OnBrokerRead(meta, fetch, 10, 0, 0, nil)
	h.OnBrokerRead(meta, fetch, 0, 0, 0, context.Canceled)
	ok, _, _ = h.consuming(true)
	require.True(t, ok, "a cancelled request says nothing about the broker")
}
