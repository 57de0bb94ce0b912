package kafka_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/forwardertest"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/testsupport/kfaketest"
)

// The Kafka target passes the suite every forward target passes, on kfake.
func TestConformance(t *testing.T) {
	t.Parallel()
	forwardertest.Run(t, forwardertest.Suite{
		Kind: "kafka",
		New: func(t *testing.T, topics map[string]int) forwardertest.Broker {
			var opts []kfake.Opt
			for name, n := range topics {
				opts = append(opts, kfake.SeedTopics(int32(n), name))
			}
			return &kfakeBroker{c: newCluster(t, opts...)}
		},
		OrderedHeaders:  true,
		UnknownTopicErr: kerr.UnknownTopicOrPartition,
		OversizeErr:     kerr.MessageTooLarge,
	})
}

// kfakeBroker is forwardertest.Broker on an in-process Kafka.
type kfakeBroker struct{ c *kfake.Cluster }

func (b *kfakeBroker) Target(t *testing.T, o forwardertest.Options) forwarder.Target {
	tg := newTarget(t, b.c, func(cfg *kafka.Config) {
		cfg.MaxMessageBytes, cfg.Linger = o.MaxMessageBytes, o.Linger
		if o.BatchBytes > 0 {
			cfg.ClientOptions = []kgo.Opt{kgo.ProducerBatchMaxBytes(int32(o.BatchBytes))}
		}
	})
	require.True(t, tg.PipelinesOrder(), "an idempotent producer pipelines a key's records")
	return tg
}

// RefuseAfter refuses the produce request after `after` with
// INVALID_RECORD, which franz-go does not retry.
func (b *kfakeBroker) RefuseAfter(t *testing.T, topic string, after int) (func() int, error) {
	return kfaketest.FailProduceAfter(t, b.c, topic, kerr.InvalidRecord.Code, after, 1), kerr.InvalidRecord
}

// Received waits until the topic's end offsets add up to n (failing if
// they pass it) and reads the n records.
func (b *kfakeBroker) Received(t *testing.T, topic string, n int) []forwardertest.Received {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.c.ListenAddrs()...))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	stored := func() int {
		ends, err := adm.ListEndOffsets(t.Context(), topic)
		require.NoError(t, err)
		sum := 0
		ends.Each(func(o kadm.ListedOffset) { sum += int(o.Offset) })
		return sum
	}
	require.Eventually(t, func() bool { return stored() >= n }, 10*time.Second, 10*time.Millisecond, "%d records in %s", n, topic)
	require.Equal(t, n, stored(), "records in %s", topic)
	out := make([]forwardertest.Received, 0, n)
	for _, kr := range consume(t, b.c, topic, n) {
		require.False(t, kr.Key != nil && len(kr.Key) == 0, "an empty key is sent as no key (nil)")
		r := forwardertest.Received{Partition: int(kr.Partition), Key: string(kr.Key), Value: kr.Value, Ref: kafka.Ref(kr)}
		for _, h := range kr.Headers {
			r.Headers = append(r.Headers, envelope.Header{Key: h.Key, Value: h.Value})
			if h.Key == envelope.HeaderID {
				r.ID = string(h.Value)
			}
		}
		out = append(out, r)
	}
	return out
}

// Throttle answers the next n produce requests with throttle_time_ms 300
// and a retriable NOT_ENOUGH_REPLICAS for every partition, so nothing is
// stored and the client produces again once the throttle is over.
func (b *kfakeBroker) Throttle(t *testing.T, n int) (string, time.Duration) {
	const throttle = 300 * time.Millisecond
	var seen atomic.Int64
	b.c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		b.c.KeepControl()
		if seen.Add(1) > int64(n) {
			return nil, nil, false
		}
		req := kreq.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		resp.ThrottleMillis = int32(throttle / time.Millisecond)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.NotEnoughReplicas.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	t.Cleanup(func() {
		require.GreaterOrEqual(t, seen.Load(), int64(n+1), "the throttled produces were produced again")
	})
	return "broker_throttle", throttle
}

// Stall holds every request the broker gets (metadata first: franz-go
// cannot take back a produce request once written, so a record is failed
// at its deadline only before that) until d has passed or the test ends.
func (b *kfakeBroker) Stall(t *testing.T, d time.Duration) {
	until := time.Now().Add(d)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	b.c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		b.c.KeepControl()
		if left := time.Until(until); left > 0 {
			b.c.SleepControl(func() {
				select {
				case <-time.After(left):
				case <-done:
				}
			})
		}
		return nil, nil, false
	})
}
