package e2e

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/envelope"
)

// TestRecordsNearMaxPayload runs records near the payload limit on a center with
// the default limits (ingest.max_payload_bytes 1 MiB) and a broker with
// Kafka's (max.message.bytes 1,048,588): a malformed 1,040,000-byte PREPARE
// is set aside in full and does not stall its partition, and a valid
// 1,020,000-byte message is forwarded, not DEAD.
func TestRecordsNearMaxPayload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.startCenter(center.Options{})
	col := e.collect(businessTopic)
	dlq := e.collect(controlTopic + ".dlq")

	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(2_000_000))
	require.NoError(t, err)
	defer cl.Close()
	random := func(n int, seed byte) []byte { // incompressible, as the broker measures compressed batches
		b := make([]byte, n)
		_, _ = rand.NewChaCha8([32]byte{seed}).Read(b)
		return b
	}
	produce := func(env envelope.Envelope) {
		rec, err := envelope.Encode(env)
		require.NoError(t, err)
		r := &kgo.Record{Topic: controlTopic, Partition: 0, Key: rec.Key, Value: rec.Value}
		for _, h := range rec.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		require.NoError(t, cl.ProduceSync(t.Context(), r).FirstErr())
	}

	// 1. A PREPARE without ec-topic (malformed) of 1,040,000 bytes.
	bad := random(1_040_000, 1)
	require.NoError(t, cl.ProduceSync(t.Context(), &kgo.Record{Topic: controlTopic, Partition: 0,
		Key: []byte("orders:bad"), Value: bad, Headers: []kgo.RecordHeader{
			{Key: envelope.HeaderType, Value: []byte("prepare")},
			{Key: envelope.HeaderBiz, Value: []byte("orders")},
			{Key: envelope.HeaderKey, Value: []byte("bad")},
		}}).FirstErr())
	// 2. A valid message of 1,020,000 bytes, then a small one.
	large := random(1_020_000, 2)
	produce(envelope.Envelope{Type: envelope.Prepare, BizID: "orders", MessageKey: "large", Payload: large,
		ForwardTopic: businessTopic, ForwardKey: "fk", Headers: []envelope.Header{{Key: "trace", Value: []byte("t-1")}}})
	produce(envelope.Envelope{Type: envelope.Commit, BizID: "orders", MessageKey: "large"})
	for i := range 3 {
		key := "after-" + strconv.Itoa(i)
		produce(envelope.Envelope{Type: envelope.Prepare, BizID: "orders", MessageKey: key, Payload: []byte(key), ForwardTopic: businessTopic})
		produce(envelope.Envelope{Type: envelope.Commit, BizID: "orders", MessageKey: key})
	}

	col.waitFor(t, []string{"orders:large", "orders:after-0", "orders:after-1", "orders:after-2"}, time.Minute)
	got := col.get("orders:large")[0]
	require.True(t, got.Value == string(large), "the 1,020,000-byte payload arrived intact (%d bytes)", len(got.Value))
	require.Equal(t, "t-1", got.Headers["trace"])

	require.Eventually(t, func() bool { _, n := dlq.count(); return n == 1 }, 30*time.Second, 20*time.Millisecond)
	d := dlq.get("")[0]
	require.Equal(t, "orders:bad", d.Key)
	require.True(t, d.Value == string(bad), "set aside with its value (%d bytes)", len(d.Value))
	require.Contains(t, d.Headers["ec-dlq-reason"], "ec-topic")
	require.NotContains(t, d.Headers, "ec-dlq-value-dropped")
}
