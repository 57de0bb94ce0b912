package kafka_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

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

// quiet discards logs; tests assert on state, not log lines.
var quiet = slog.New(slog.DiscardHandler)

// random returns n incompressible bytes (the producer compresses batches).
func random(n int, seed byte) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}
