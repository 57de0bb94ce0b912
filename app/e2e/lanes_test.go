package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/ingest"
)

// TestClusterLaneJoinAndLeave: centers with a control lane on PostgreSQL.
// One runs, a second joins, the first leaves, while messages go to the
// control topic and to the lane: the lane's partitions are shared like the
// control topic's (one ownership set, each store partition owned once),
// everything is forwarded, and the lane's rows carry lane partitions.
func TestClusterLaneJoinAndLeave(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "postgres", func(c *config.Config) {
		c.Kafka.SessionTimeout = 6 * time.Second
		c.Kafka.MetadataMaxAge = time.Second
		c.Kafka.CreateTopics, c.Kafka.ControlPartitions = true, partitions
		c.Kafka.Lanes = []config.Lane{{Name: "vip", ID: 1, BizIDs: []string{"vip"}}}
	})
	laneTopic := controlTopic + ".lane.vip"
	col := e.collect(businessTopic)
	a, stopA := e.startStoppableCenter()
	waitOwnedBy(t, 2*partitions, a)
	require.Contains(t, a.Owned.Partitions(), int32(ingest.LaneStride+partitions-1))

	producer := func(topic string) *clientlib.Producer {
		p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(topic),
			clientlib.WithKgoOptions(kgo.MetadataMinAge(100*time.Millisecond)))
		require.NoError(t, err)
		t.Cleanup(p.Close)
		return p
	}
	onLane, onDefault := producer(laneTopic), producer(controlTopic)
	var ids []string
	send := func(from, n int) {
		for i := from; i < from+n; i++ {
			for _, s := range []struct {
				p   *clientlib.Producer
				biz string
			}{{onLane, "vip"}, {onDefault, "orders"}} {
				msg := clientlib.Message{BizID: s.biz, Key: fmt.Sprintf("k-%d", i), Payload: []byte("x"), ForwardTopic: businessTopic}
				require.NoError(t, s.p.Transact(t.Context(), msg, func(context.Context) error { return nil }))
				ids = append(ids, msg.ID())
			}
		}
	}
	send(0, 50)
	b := e.startCenter(center.Options{})
	waitOwnedBy(t, 2*partitions, a, b)
	t.Logf("after the join: a owns %v, b owns %v", a.Owned.Partitions(), b.Owned.Partitions())
	send(50, 50)
	stopA()
	waitOwnedBy(t, 2*partitions, b)
	send(100, 50)
	col.waitFor(t, ids, 2*time.Minute)

	for i := range 150 {
		m, err := b.Store.Get(t.Context(), "vip", fmt.Sprintf("k-%d", i))
		require.NoError(t, err)
		lane, p := ingest.LanePartition(m.Partition)
		require.Equal(t, 1, lane, "vip k-%d stored in partition %d", i, m.Partition)
		require.Less(t, p, int32(partitions))
		m, err = b.Store.Get(t.Context(), "orders", fmt.Sprintf("k-%d", i))
		require.NoError(t, err)
		require.Less(t, m.Partition, int32(partitions))
	}
}
