package envelope_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope"
)

// A forwarded message carries the producer's headers in order and one
// ec-id, the center's: a producer's own ec-id is dropped.
func TestForwardHeadersReplaceAProducerID(t *testing.T) {
	t.Parallel()
	hs := []envelope.Header{{Key: "trace", Value: []byte("t1")}, {Key: envelope.HeaderID, Value: []byte("forged")}, {Key: "empty"}}
	id := envelope.MessageID(nil, "orders", "o-1")
	require.Equal(t, "orders:o-1", string(id))
	got := envelope.ForwardHeaders(hs, id)
	require.Equal(t, []envelope.Header{{Key: "trace", Value: []byte("t1")}, {Key: "empty"}, {Key: envelope.HeaderID, Value: id}}, got)
	size := 0
	for _, h := range got {
		size += len(h.Key) + len(h.Value)
	}
	require.Equal(t, size, envelope.ForwardHeadersSize(hs, len(id)))
	// No producer headers: only ec-id.
	require.Equal(t, []envelope.Header{{Key: envelope.HeaderID, Value: id}}, envelope.ForwardHeaders(nil, id))
	require.Equal(t, len(envelope.HeaderID)+len(id), envelope.ForwardHeadersSize(nil, len(id)))
}

// The dead-letter headers share the prefix replay drops.
func TestDLQHeadersHaveThePrefix(t *testing.T) {
	t.Parallel()
	for _, h := range []string{envelope.HeaderDLQReason, envelope.HeaderDLQTopic, envelope.HeaderDLQPartition,
		envelope.HeaderDLQOffset, envelope.HeaderDLQValueDropped, envelope.HeaderDLQSize, envelope.HeaderDLQOmitted} {
		require.Regexp(t, `^ec-dlq-[a-z-]+$`, h)
	}
}
