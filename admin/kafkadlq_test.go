package admin_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/admin"
)

func newKafkaDLQ(t *testing.T) (*admin.KafkaDLQ, *kgo.Client, []string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "dlq", "control"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	seeds := c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("center"))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	d := admin.NewKafkaDLQ(cl, "dlq", "control")
	d.PollTimeout = 500 * time.Millisecond
	return d, cl, seeds
}

// produceDLQ writes n records to one partition of the dead-letter topic.
func produceDLQ(t *testing.T, seeds []string, partition int32, n int) {
	t.Helper()
	p, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer p.Close()
	for i := range n {
		r := &kgo.Record{Topic: "dlq", Partition: partition,
			Key:   fmt.Appendf(nil, "biz:k-%d-%d", partition, i),
			Value: fmt.Appendf(nil, "value %d/%d", partition, i),
			Headers: []kgo.RecordHeader{
				{Key: "ec-type", Value: []byte("prepare")},
				{Key: "ec-biz", Value: []byte("biz")},
				{Key: "ec-key", Value: fmt.Appendf(nil, "k-%d-%d", partition, i)},
				{Key: "ec-topic", Value: []byte("orders.events")},
				{Key: "ec-dlq-reason", Value: fmt.Appendf(nil, "reason %d/%d", partition, i)},
				{Key: "ec-dlq-offset", Value: []byte("42")},
			}}
		require.NoError(t, p.ProduceSync(t.Context(), r).FirstErr())
	}
}

func TestKafkaDLQList(t *testing.T) {
	t.Parallel()
	d, _, seeds := newKafkaDLQ(t)
	recs, next, err := d.List(t.Context(), 10, "")
	require.NoError(t, err)
	require.Empty(t, recs)
	require.Empty(t, next)

	produceDLQ(t, seeds, 0, 5)
	produceDLQ(t, seeds, 1, 2)
	var got []string
	cursor := ""
	pages := 0
	for {
		recs, next, err := d.List(t.Context(), 3, cursor)
		require.NoError(t, err)
		require.LessOrEqual(t, len(recs), 3)
		for _, r := range recs {
			got = append(got, fmt.Sprintf("%d/%d %s %s", r.Partition, r.Offset, r.Key, r.Reason()))
		}
		pages++
		if next == "" {
			break
		}
		cursor = next
		require.Less(t, pages, 10)
	}
	require.Equal(t, []string{
		"0/0 biz:k-0-0 reason 0/0", "0/1 biz:k-0-1 reason 0/1", "0/2 biz:k-0-2 reason 0/2",
		"0/3 biz:k-0-3 reason 0/3", "0/4 biz:k-0-4 reason 0/4", "1/0 biz:k-1-0 reason 1/0",
		"1/1 biz:k-1-1 reason 1/1",
	}, got)
	require.Equal(t, 3, pages)

	// Records written later show up when the last page is read again.
	produceDLQ(t, seeds, 1, 3)
	recs, next, err = d.List(t.Context(), 10, cursor)
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, recs, 4)
	require.Equal(t, int64(1), recs[0].Offset)
	require.Equal(t, int64(4), recs[3].Offset)

	_, _, err = d.List(t.Context(), 10, "0:x")
	require.ErrorIs(t, err, admin.ErrBadDLQCursor)
}

func TestKafkaDLQReplay(t *testing.T) {
	t.Parallel()
	d, _, seeds := newKafkaDLQ(t)
	produceDLQ(t, seeds, 1, 3)
	_, err := d.Replay(t.Context(), 1, 2, admin.ReplayFix{})
	require.NoError(t, err)

	c, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("control"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) == 0 {
		fs := c.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		got = append(got, fs.Records()...)
	}
	require.Len(t, got, 1)
	r := got[0]
	require.Equal(t, "biz:k-1-2", string(r.Key))
	require.Equal(t, "value 1/2", string(r.Value))
	require.Equal(t, []kgo.RecordHeader{{Key: "ec-type", Value: []byte("prepare")}, {Key: "ec-biz", Value: []byte("biz")},
		{Key: "ec-key", Value: []byte("k-1-2")}, {Key: "ec-topic", Value: []byte("orders.events")}}, r.Headers,
		"ec-dlq-* headers are dropped")

	for _, po := range [][2]int64{{1, 3}, {0, 0}, {7, 0}} {
		_, err := d.Replay(t.Context(), int32(po[0]), po[1], admin.ReplayFix{})
		require.ErrorIs(t, err, admin.ErrDLQNotFound)
	}
}
