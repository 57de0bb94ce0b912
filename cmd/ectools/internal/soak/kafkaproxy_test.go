package soak

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A client seeded with the Kafka proxy produces and consumes in a group
// through it: the broker and coordinator addresses it learns are the
// proxy's, so its produce, join and fetch requests all cross the proxy.
func TestKafkaProxyIsTheAdvertisedBroker(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	p, err := newKafkaProxy("test", cluster.ListenAddrs()[0])
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.close() })

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.DefaultProduceTopic("t"),
		kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	require.NoError(t, cl.ProduceSync(t.Context(), &kgo.Record{Value: []byte("v")}).FirstErr())
	for got := 0; got == 0; {
		fs := cl.PollFetches(t.Context())
		require.NoError(t, fs.Err())
		got = fs.NumRecords()
	}
	for _, k := range []kmsg.Key{kmsg.Produce, kmsg.JoinGroup, kmsg.Fetch} {
		require.NotZero(t, p.kafka.seen[k].Load(), "no %s request crossed the proxy: the client went around it", k.Name())
	}

	// Cut, the proxy still reads what the client writes, and notes when:
	// a Produce request written during the cut is counted in it.
	p.cut(bothWays)
	cutAt := time.Now()
	before := p.kafka.seen[kmsg.Produce].Load()
	done := make(chan error, 1)
	cl.Produce(t.Context(), &kgo.Record{Value: []byte("during the cut")}, func(_ *kgo.Record, err error) { done <- err })
	require.Eventually(t, func() bool { return p.kafka.seen[kmsg.Produce].Load() > before }, 30*time.Second, time.Millisecond)
	require.Equal(t, 1, p.kafka.producedBetween(cutAt, time.Now()))
	p.heal()
	require.NoError(t, <-done, "delivered after the heal")
}
