package e2e

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/internal/center"
	"github.com/eventcenter/eventcenter/internal/config"
	"github.com/eventcenter/eventcenter/state"
)

// failProduce makes the broker answer produce requests with the error code
// that errorFor returns for their topic (0: handled normally). The topics
// must exist: recent produce requests name topics by ID.
func failProduce(t *testing.T, e *env, errorFor func(topic string) int16, topics ...string) {
	adm := kadm.NewClient(e.raw())
	_, err := adm.CreateTopics(t.Context(), 1, 1, nil, topics...)
	require.NoError(t, err)
	details, err := adm.ListTopics(t.Context(), topics...)
	require.NoError(t, err)
	names := map[[16]byte]string{}
	for _, d := range details {
		names[d.ID] = d.Topic
	}
	e.cluster.ControlKey(kmsg.Produce.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		pr := req.(*kmsg.ProduceRequest)
		if len(pr.Topics) != 1 {
			return nil, nil, false
		}
		topic := pr.Topics[0].Topic
		if topic == "" {
			topic = names[pr.Topics[0].TopicID]
		}
		code := errorFor(topic)
		if code == 0 {
			return nil, nil, false
		}
		e.cluster.KeepControl()
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, tp := range pr.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = tp.Topic
			rt.TopicID = tp.TopicID
			for _, p := range tp.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = code
				rp.BaseOffset = -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
}

// TestBrokerErrorsAreRetriedThenDelivered injects retriable errors on the
// business topic's produce path: the messages still arrive. A topic whose
// produce fails with a permanent error ends DEAD with the error kept, while
// the other topic keeps flowing.
func TestBrokerErrorsAreRetriedThenDelivered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	var transient atomic.Int32
	failProduce(t, e, func(topic string) int16 {
		switch {
		case topic == "poison.events":
			return kerr.InvalidRecord.Code
		case topic == businessTopic && transient.Add(1) <= 20:
			return kerr.CorruptMessage.Code
		}
		return 0
	}, businessTopic, "poison.events")
	c := e.startCenter(center.Options{})
	col := e.collect(businessTopic)
	raw := e.raw()

	produceEnvelope(t, raw, envelope.Envelope{Type: envelope.Prepare, BizID: "orders", MessageKey: "poison", Payload: []byte("x"), ForwardTopic: "poison.events"})
	produceEnvelope(t, raw, envelope.Envelope{Type: envelope.Commit, BizID: "orders", MessageKey: "poison"})
	pl := produceMix(t, e, "faulty", 200, 2)
	col.waitFor(t, pl.committed, time.Minute)
	checkForwarded(t, col, pl)
	require.Greater(t, transient.Load(), int32(20), "the injected errors were hit")

	require.Eventually(t, func() bool {
		m, err := c.Store.Get(t.Context(), "orders", "poison")
		return err == nil && m.SendStatus == state.SendDead
	}, time.Minute, 20*time.Millisecond)
	m, err := c.Store.Get(t.Context(), "orders", "poison")
	require.NoError(t, err)
	require.Contains(t, m.LastError, "poison.events", "the DEAD message keeps the reason")
}

// TestMalformedRecordsGoToTheDLQ writes bad records between good ones on one
// partition: the bad ones land in the dead-letter topic with a reason, the
// good ones after them are still processed.
func TestMalformedRecordsGoToTheDLQ(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite", func(c *config.Config) { c.Ingest.MaxPayloadBytes = 1024 })
	e.startCenter(center.Options{})
	col := e.collect(businessTopic)
	dlq := e.collect(controlTopic + ".dlq")

	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	send := func(key, value string, headers ...string) {
		r := &kgo.Record{Topic: controlTopic, Partition: 0, Key: []byte(key), Value: []byte(value)}
		for i := 0; i+1 < len(headers); i += 2 {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: headers[i], Value: []byte(headers[i+1])})
		}
		require.NoError(t, cl.ProduceSync(t.Context(), r).FirstErr())
	}
	good := func(key string) {
		for _, env := range []envelope.Envelope{
			{Type: envelope.Prepare, BizID: "orders", MessageKey: key, Payload: []byte("payload-" + key), ForwardTopic: businessTopic, ForwardKey: "fk-" + key, Headers: []envelope.Header{{Key: "trace", Value: []byte("t-" + key)}}},
			{Type: envelope.Commit, BizID: "orders", MessageKey: key},
		} {
			rec, err := envelope.Encode(env)
			require.NoError(t, err)
			r := &kgo.Record{Topic: controlTopic, Partition: 0, Key: rec.Key, Value: rec.Value}
			for _, h := range rec.Headers {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
			}
			require.NoError(t, cl.ProduceSync(t.Context(), r).FirstErr())
		}
	}

	send("orders:bad-json", "{not json")                                                         // no ec-type: compat JSON, broken
	good("after-1")                                                                              //
	send("orders:bad-type", "", "ec-type", "maybe", "ec-biz", "orders", "ec-key", "bad-type")    // unknown type
	send("orders:no-topic", "x", "ec-type", "prepare", "ec-biz", "orders", "ec-key", "no-topic") // prepare without ec-topic
	send("orders:too-big", strings.Repeat("x", 2048), "ec-type", "prepare", "ec-biz", "orders", "ec-key", "too-big", "ec-topic", businessTopic)
	good("after-2")

	col.waitFor(t, []string{"orders:after-1", "orders:after-2"}, time.Minute)
	checkForwarded(t, col, plan{committed: []string{"orders:after-1", "orders:after-2"}})

	require.Eventually(t, func() bool { _, n := dlq.count(); return n == 4 }, 30*time.Second, 20*time.Millisecond)
	reasons := map[string]string{}
	dlq.mu.Lock()
	for _, recs := range dlq.byID {
		for _, r := range recs {
			reasons[r.Key] = r.Headers["ec-dlq-reason"]
			require.Equal(t, controlTopic, r.Headers["ec-dlq-topic"])
			require.Equal(t, "0", r.Headers["ec-dlq-partition"])
			require.NotEmpty(t, r.Headers["ec-dlq-offset"])
		}
	}
	dlq.mu.Unlock()
	require.Len(t, reasons, 4)
	for key, reason := range reasons {
		require.NotEmpty(t, reason, "record %s has no reason", key)
	}
	require.Contains(t, reasons["orders:too-big"], "payload")
	require.Contains(t, reasons["orders:no-topic"], "ec-topic")
	require.Contains(t, reasons["orders:bad-type"], "ec-type")
}
