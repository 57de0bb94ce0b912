package kafka_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/forwarder/kafka"
)

// newCluster starts an in-process Kafka with the topics seeded (3
// partitions each); the test's end closes it.
func newCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// newTarget returns a Kafka target on the cluster; the test's end closes it.
func newTarget(t *testing.T, c *kfake.Cluster, mod func(*kafka.Config)) *kafka.Target {
	t.Helper()
	cfg := kafka.Config{Name: "kafka", Brokers: c.ListenAddrs(), UnknownTopicRetries: 1, Logger: quiet}
	if mod != nil {
		mod(&cfg)
	}
	tg, err := kafka.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tg.Close() })
	return tg
}

// consume reads n records from topic.
func consume(t *testing.T, c *kfake.Cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d records", len(out), n)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// topicID returns a topic's id (produce v13+ names topics by id).
func topicID(t *testing.T, c *kfake.Cluster, topic string) [16]byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(t.Context(), topic)
	require.NoError(t, err)
	require.NoError(t, td[topic].Err)
	return td[topic].ID
}

// failProduce makes the next `times` produce requests touching topic fail
// with the error code on every partition (times < 0: for ever). It returns a
// function reporting how many requests it failed.
func failProduce(t *testing.T, c *kfake.Cluster, topic string, code int16, times int) func() int {
	t.Helper()
	id := topicID(t, c, topic)
	failed := make(chan struct{}, 1<<16)
	c.ControlKey(kmsg.Produce.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		pr := req.(*kmsg.ProduceRequest)
		hit := false
		for _, rt := range pr.Topics {
			hit = hit || rt.Topic == topic || rt.TopicID == id
		}
		if !hit {
			return nil, nil, false
		}
		if times >= 0 && len(failed) >= times {
			c.DropControl()
			return nil, nil, false
		}
		// Kept for ever once kept: kfake never resets the flag, so the
		// count above decides when to stop.
		c.KeepControl()
		failed <- struct{}{}
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range pr.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, p := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = p.Partition
				sp.ErrorCode = code
				sp.BaseOffset = -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return func() int { return len(failed) }
}

// quiet discards logs; tests assert on state, not log lines.
var quiet = slog.New(slog.DiscardHandler)
