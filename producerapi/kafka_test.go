package producerapi

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
)

// producerClient is a client as the center makes it for the API.
func producerClient(t *testing.T, brokers ...string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kafkarec.Partitioner()), kgo.ProducerLinger(0))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// Through a real broker: the answer's partition and offset are where the
// record is, and the partition is the one Kafka's murmur2 key partitioner
// gives every client for the key (so the API's and a Kafka producer's
// envelopes of one message share a partition).
func TestProducesToTheBroker(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(8, "ec.control"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	cl := producerClient(t, c.ListenAddrs()...)
	f := newFixture(t, func(cfg *Config) { cfg.Producer = cl })

	res, body := f.do("POST", "/v1/messages/orders/o-42/prepare?ec-topic=orders.events", ordersToken, text("hello"))
	require.Equal(t, http.StatusAccepted, res.StatusCode, body)
	var a accepted
	require.NoError(t, json.Unmarshal([]byte(body), &a))

	// A Kafka producer's record for the same message lands on the same partition.
	other := producerClient(t, c.ListenAddrs()...)
	r := other.ProduceSync(t.Context(), &kgo.Record{Topic: "ec.control", Key: []byte("orders:o-42"), Value: []byte("x")})
	require.NoError(t, r.FirstErr())
	require.Equal(t, r[0].Record.Partition, a.Partition)

	cons, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"ec.control": {a.Partition: kgo.NewOffset().At(a.Offset)}}))
	require.NoError(t, err)
	defer cons.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	fs := cons.PollRecords(ctx, 1)
	require.NoError(t, ctx.Err())
	got := fs.Records()[0]
	e, err := envelope.Decoder{}.Decode(envelope.Record{Key: got.Key, Value: got.Value, Headers: kafkaHeaders(got)})
	require.NoError(t, err)
	require.Equal(t, envelope.Envelope{Type: envelope.Prepare, BizID: "orders", MessageKey: "o-42", Payload: []byte("hello"), ForwardTopic: "orders.events"}, e)
}

func kafkaHeaders(r *kgo.Record) []envelope.Header {
	out := make([]envelope.Header, len(r.Headers))
	for i, h := range r.Headers {
		out[i] = envelope.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

// No broker: 503 after the produce timeout, with Retry-After.
func TestUnreachableBrokerIs503(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	cl := producerClient(t, addr)
	f := newFixture(t, func(cfg *Config) { cfg.Producer, cfg.ProduceTimeout = cl, 300*time.Millisecond })
	start := time.Now()
	res, body := f.do("POST", "/v1/messages/orders/k/commit", ordersToken, nil)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, body)
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	require.Less(t, time.Since(start), 5*time.Second)
	require.NotContains(t, body, addr)
}

// An ordered message's envelopes go to the partition of bizID:orderKey:
// the PREPARE because it carries ec-order-key, its COMMIT and ROLLBACK
// when they name it (routing only: it is not written into their records).
// Without it a COMMIT goes to the partition of its own key.
func TestOrderKeyRoutesToOnePartition(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(16, "ec.control"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	f := newFixture(t, func(cfg *Config) { cfg.Producer = producerClient(t, c.ListenAddrs()...) })
	want := envelope.PartitionFor(envelope.OrderRoutingKey("orders", "cust-7"), 16)
	partitionOf := func(method, target string) int32 {
		t.Helper()
		res, body := f.do(method, target, ordersToken, text(""))
		require.Equal(t, http.StatusAccepted, res.StatusCode, body)
		var a accepted
		require.NoError(t, json.Unmarshal([]byte(body), &a))
		return a.Partition
	}
	spread := map[int32]bool{}
	for i := range 6 {
		key := "o-" + string(rune('a'+i))
		require.Equal(t, want, partitionOf("POST", "/v1/messages/orders/"+key+"/prepare?ec-topic=orders.events&ec-order-key=cust-7"), key)
		require.Equal(t, want, partitionOf("POST", "/v1/messages/orders/"+key+"/commit?ec-order-key=cust-7"), key)
		spread[partitionOf("POST", "/v1/messages/orders/"+key+"/rollback")] = true
	}
	require.Greater(t, len(spread), 1, "without an order key, envelopes go by their own key")

	res, body := f.do("POST", "/v1/messages/orders/o-z/commit?ec-topic=t", ordersToken, text(""))
	require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
	field, _ := errorOf(t, body)
	require.Equal(t, "ec-topic", field)
}
