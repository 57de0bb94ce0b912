package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
)

// TestBrokerErrorsAreRetriedThenDelivered injects retriable errors on the
// business topic's produce path: the messages still arrive. A topic whose
// produce fails with a permanent error ends DEAD with the error kept, while
// the other topic keeps flowing.
func TestBrokerErrorsAreRetriedThenDelivered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	_, err := kadm.NewClient(e.raw()).CreateTopics(t.Context(), 1, 1, nil, "poison.events")
	require.NoError(t, err)
	// kfake's faults are checked per topic partition, so a produce request
	// carrying both topics is still failed correctly.
	prod := []kmsg.Key{kmsg.Produce}
	poison := e.cluster.Fault(kfake.Fault{Keys: prod, Topic: "poison.events", Err: kerr.InvalidRecord, Count: -1})
	defer poison.Remove()
	burst := e.cluster.Fault(kfake.Fault{Keys: prod, Topic: businessTopic, Err: kerr.CorruptMessage, Count: 20})
	defer burst.Remove()
	c := e.startCenter(center.Options{})
	col := e.collect(businessTopic)
	raw := e.raw()

	produceEnvelope(t, raw, envelope.Envelope{Type: envelope.Prepare, BizID: "orders", MessageKey: "poison", Payload: []byte("x"), ForwardTopic: "poison.events"})
	produceEnvelope(t, raw, envelope.Envelope{Type: envelope.Commit, BizID: "orders", MessageKey: "poison"})
	pl := produceMix(t, e, "faulty", 200, 2)
	col.waitFor(t, pl.committed, time.Minute)
	checkForwarded(t, col, pl)
	require.Equal(t, 20, burst.Hits(), "the injected errors were hit")

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
