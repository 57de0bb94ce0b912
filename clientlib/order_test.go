package clientlib_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
)

// The envelopes of messages with one order key all go to the partition of
// bizID:orderKey, in the order they were sent, with their own record keys;
// other messages go where Kafka's default partitioner puts their key.
func TestOrderedMessagesShareAControlPartition(t *testing.T) {
	t.Parallel()
	const parts = 8
	c := newCluster(t, parts)
	p := newProducer(t, c)
	ctx := t.Context()
	var keys []string
	for i := range 12 {
		m := message(strconv.Itoa(i))
		m.OrderKey = "order-42"
		keys = append(keys, m.Key)
		require.NoError(t, p.Transact(ctx, m, func(context.Context) error { return nil }))
	}
	plain := message("plain")
	require.NoError(t, p.Prepare(ctx, plain))
	require.NoError(t, p.CommitOrdered(ctx, plain.BizID, plain.Key, ""))

	want := envelope.PartitionFor(envelope.OrderRoutingKey("order", "order-42"), parts)
	recs := readControl(t, c, 2*12+2)
	var order []string
	for _, r := range recs {
		id := string(r.Key)
		if id == plain.ID() {
			require.Equal(t, envelope.PartitionFor(id, parts), r.Partition, "unordered: by record key")
			continue
		}
		require.Equal(t, want, r.Partition, "%s", id)
		if recHeader(r, envelope.HeaderType) == "prepare" {
			order = append(order, id[len("order:"):])
			require.Equal(t, "order-42", recHeader(r, envelope.HeaderOrderKey))
		}
	}
	require.Equal(t, keys, order, "in the order sent")
}

// For record keys, Partitioner is Kafka's default partitioner (the one the
// producer used before: franz-go's murmur2 StickyKeyPartitioner).
func TestPartitionerIsKafkasDefaultForKeys(t *testing.T) {
	t.Parallel()
	ours := clientlib.Partitioner().ForTopic("t")
	kafka := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	for i := range 2000 {
		r := &kgo.Record{Key: []byte("biz:" + strconv.Itoa(i*7919))}
		for _, n := range []int{1, 3, 12, 64} {
			require.Equal(t, kafka.Partition(r, n), ours.Partition(r, n), "%s over %d", r.Key, n)
		}
	}
}

func recHeader(r *kgo.Record, name string) string {
	for _, h := range r.Headers {
		if h.Key == name {
			return string(h.Value)
		}
	}
	return ""
}
