package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
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
	d.PollTimeout = 10 * time.Second
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
	recs, next, err := d.List(t.Context(), admin.DLQQuery{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, recs)
	require.Empty(t, next)

	produceDLQ(t, seeds, 0, 5)
	produceDLQ(t, seeds, 1, 2)
	var got []string
	cursor := ""
	pages := 0
	for {
		recs, next, err := d.List(t.Context(), admin.DLQQuery{Limit: 3, After: cursor})
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
	recs, next, err = d.List(t.Context(), admin.DLQQuery{Limit: 10, After: cursor})
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, recs, 4)
	require.Equal(t, int64(1), recs[0].Offset)
	require.Equal(t, int64(4), recs[3].Offset)

	_, _, err = d.List(t.Context(), admin.DLQQuery{Limit: 10, After: "0:x"})
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

// TestKafkaDLQReplayRefusesACopyWithoutValue: a dead-letter copy that
// ingest wrote without its value (too large for the DLQ) must never be
// replayed: its PREPARE would be stored with an empty body and forwarded so.
func TestKafkaDLQReplayRefusesACopyWithoutValue(t *testing.T) {
	t.Parallel()
	d, _, seeds := newKafkaDLQ(t)
	env := admintest.New(t, d)
	produceRecord(t, seeds, "orders:o-1", "", "ec-type", "prepare", "ec-biz", "orders", "ec-key", "o-1",
		"ec-topic", "orders.events", "ec-dlq-reason", "ec-topic: bad", "ec-dlq-value-dropped", "MESSAGE_TOO_LARGE",
		"ec-dlq-size", "1040000")
	_, err := d.Replay(t.Context(), 0, 0, admin.ReplayFix{})
	require.ErrorIs(t, err, admin.ErrReplayInvalid)
	require.ErrorContains(t, err, "without its value")
	a := post(t, env, adminapi.DLQReplayPath(0, 0), reason("try"))
	require.Equal(t, http.StatusConflict, a.code)
	require.Contains(t, a.err(t), "without its value")
}

// produceRecord writes one record to partition 0 of the dead-letter topic.
func produceRecord(t *testing.T, seeds []string, key, value string, headers ...string) {
	t.Helper()
	p, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer p.Close()
	r := &kgo.Record{Topic: "dlq", Partition: 0, Key: []byte(key), Value: []byte(value)}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: headers[i], Value: []byte(headers[i+1])})
	}
	require.NoError(t, p.ProduceSync(t.Context(), r).FirstErr())
}

// controlRecords reads n records from the control topic.
func controlRecords(t *testing.T, seeds []string, n int) []*kgo.Record {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("control"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := c.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		got = append(got, fs.Records()...)
	}
	return got
}

// TestKafkaDLQReplayFillsTheOrphan: the PREPARE of an orphan COMMIT was
// dead-lettered for lacking a forward topic. Replayed as it is, it would be
// dead-lettered again, so it is refused; replayed with the operator's topic
// it is a valid envelope that gives the orphan its body and makes it
// sendable, as ingest applies it.
func TestKafkaDLQReplayFillsTheOrphan(t *testing.T) {
	t.Parallel()
	d, _, seeds := newKafkaDLQ(t)
	env := admintest.New(t, d)
	now := env.Clock.Now()
	_, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{
		{BizID: "orders", Key: "o-9", Event: state.Event{Kind: state.KindCommit, At: now}},
		{BizID: "orders", Key: "o-10", Event: state.Event{Kind: state.KindCommit, At: now}},
	}})
	require.NoError(t, err)
	produceRecord(t, seeds, "orders:o-9", "the payload", "ec-type", "prepare", "ec-biz", "orders", "ec-key", "o-9",
		"ec-fkey", "fk-9", "ec-h-trace", "t-9", "ec-dlq-reason", "ec-topic: required on prepare")
	produceRecord(t, seeds, "orders:o-9", "", "ec-type", "commit", "ec-biz", "orders", "ec-key", "o-9", "ec-dlq-reason", "test")
	// A TrustMessage JSON prepare without forwardTopic.
	produceRecord(t, seeds, "anything", `{"message":"json payload","bizID":"orders","messageKey":"o-10","messageStatus":1}`,
		"ec-dlq-reason", "forwardTopic: required on prepare")

	// As it is: refused, nothing produced.
	_, err = d.Replay(t.Context(), 0, 0, admin.ReplayFix{})
	require.ErrorIs(t, err, admin.ErrReplayInvalid)
	require.ErrorContains(t, err, "ec-topic")
	a := post(t, env, adminapi.DLQReplayPath(0, 0), reason("try"))
	require.Equal(t, http.StatusConflict, a.code)
	require.Contains(t, a.err(t), "would be dead-lettered again")
	// The record is named with its topic (the text said "/0@0").
	require.Contains(t, a.err(t), "decode control record dlq/0@0: ec-topic")
	// A topic for a commit makes no sense.
	_, err = d.Replay(t.Context(), 0, 1, admin.ReplayFix{Topic: "orders.events"})
	require.ErrorIs(t, err, admin.ErrBadReplayFix)
	a = post(t, env, adminapi.DLQReplayPath(0, 1), adminapi.DLQReplayRequest{Reason: "r", Topic: "orders.events"})
	require.Equal(t, http.StatusBadRequest, a.code)
	require.Contains(t, a.err(t), "only a prepare carries a forward topic")

	res := decode[adminapi.DLQReplayResult](t, post(t, env, adminapi.DLQReplayPath(0, 0),
		adminapi.DLQReplayRequest{Reason: "topic was missing", Topic: "orders.events"}), http.StatusOK)
	require.True(t, res.Audited)
	res = decode[adminapi.DLQReplayResult](t, post(t, env, adminapi.DLQReplayPath(0, 2),
		adminapi.DLQReplayRequest{Reason: "topic was missing", Topic: "orders.events"}), http.StatusOK)
	require.True(t, res.Audited, "the JSON names orders:o-10")

	// What ingest does with the replayed records: decode, apply.
	recs := controlRecords(t, seeds, 2)
	require.Len(t, recs, 2)
	var changes []store.Change
	for _, r := range recs {
		er := envelope.Record{Topic: r.Topic, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			require.NotContains(t, h.Key, "ec-dlq-")
			er.Headers = append(er.Headers, envelope.Header{Key: h.Key, Value: h.Value})
		}
		e, err := envelope.Decoder{}.Decode(er)
		require.NoError(t, err)
		require.Equal(t, envelope.Prepare, e.Type)
		changes = append(changes, store.Change{BizID: e.BizID, Key: e.MessageKey, Event: state.Event{Kind: state.KindPrepare, At: now,
			Body: &state.Body{Payload: e.Payload, Headers: e.Headers, Topic: e.ForwardTopic, ForwardKey: e.ForwardKey}}})
	}
	out, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: time.Minute})
	require.NoError(t, err)
	require.Len(t, out.Sendable, 2, "both orphans got their body and are due for sending")
	m, err := env.Store.Get(t.Context(), "orders", "o-9")
	require.NoError(t, err)
	require.True(t, m.Sendable())
	require.Equal(t, "orders.events", m.Topic)
	require.Equal(t, "fk-9", m.ForwardKey)
	require.Equal(t, "the payload", string(m.Payload))
	require.Equal(t, []envelope.Header{{Key: "trace", Value: []byte("t-9")}}, m.Headers)
	m, err = env.Store.Get(t.Context(), "orders", "o-10")
	require.NoError(t, err)
	require.Equal(t, "json payload", string(m.Payload))
	require.Equal(t, "orders.events", m.Topic)
	audit, err := env.Store.Audit(t.Context(), "orders", "o-9")
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Equal(t, "dlq_replay", audit[0].Action)
}

// TestKafkaDLQListBounded: the reader keeps previews only and ends a page
// at the byte bound; the cursor continues after the last record shown.
func TestKafkaDLQListBounded(t *testing.T) {
	t.Parallel()
	d, _, seeds := newKafkaDLQ(t)
	p, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer p.Close()
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	for i := range 5 {
		r := &kgo.Record{Topic: "dlq", Partition: 0, Key: fmt.Appendf(nil, "biz:k-%d", i), Value: big,
			Headers: []kgo.RecordHeader{{Key: "ec-dlq-reason", Value: []byte("too large")}}}
		require.NoError(t, p.ProduceSync(t.Context(), r).FirstErr())
	}
	var offsets []int64
	cursor, pages := "", 0
	for {
		recs, next, err := d.List(t.Context(), admin.DLQQuery{Limit: 100, After: cursor, MaxBytes: 700 << 10, Preview: 100})
		require.NoError(t, err)
		require.LessOrEqual(t, len(recs), 2, "700 KiB holds two records of 300 KiB")
		for _, r := range recs {
			require.Len(t, r.Value, 100)
			require.Equal(t, 300<<10, r.ValueSize)
			require.Equal(t, "too large", r.Reason())
			offsets = append(offsets, r.Offset)
		}
		pages++
		require.Less(t, pages, 10)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, []int64{0, 1, 2, 3, 4}, offsets)
	require.Equal(t, 3, pages)

	whole, err := d.Get(t.Context(), 0, 3)
	require.NoError(t, err)
	require.Equal(t, big, whole.Value)
	require.Equal(t, "dlq", whole.Topic)
	_, err = d.Get(t.Context(), 0, 5)
	require.ErrorIs(t, err, admin.ErrDLQNotFound)
}

// A broker that does not answer a read in time makes List and Get fail,
// saying so: an empty page taken for the end of the topic hid every
// dead letter from the operator, and a Get answered "not found". Once the
// broker answers, the records are there.
func TestKafkaDLQSlowBrokerIsAnErrorNotAnEmptyPage(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "dlq", "control"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	seeds := c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	produceDLQ(t, seeds, 0, 3)
	var slow atomic.Bool
	slow.Store(true)
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if slow.Load() {
			time.Sleep(600 * time.Millisecond)
		}
		return nil, nil, false
	})
	d := admin.NewKafkaDLQ(cl, "dlq", "control")
	d.PollTimeout = 200 * time.Millisecond

	recs, next, err := d.List(t.Context(), admin.DLQQuery{Limit: 10})
	require.ErrorContains(t, err, "read dead-letter topic dlq: nothing arrived within 200ms at partition 0 from offset 0 (end 3)")
	require.Empty(t, recs)
	require.Empty(t, next)
	_, err = d.Get(t.Context(), 0, 1)
	require.Error(t, err)
	require.NotErrorIs(t, err, admin.ErrDLQNotFound)

	slow.Store(false)
	d.PollTimeout = 10 * time.Second
	recs, next, err = d.List(t.Context(), admin.DLQQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, recs, 3)
	require.Empty(t, next)
}

// A dead-letter topic whose end is a transaction marker (a transactional
// writer) is read to its end at once: the marker is seen, not waited for
// until the poll times out.
func TestKafkaDLQReadsPastTransactionMarkers(t *testing.T) {
	t.Parallel()
	d, _, seeds := newKafkaDLQ(t)
	tx, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("dlq-writer"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer tx.Close()
	require.NoError(t, tx.BeginTransaction())
	for i := range 2 {
		r := &kgo.Record{Topic: "dlq", Partition: 0, Key: fmt.Appendf(nil, "biz:k-%d", i), Value: []byte("v"),
			Headers: []kgo.RecordHeader{{Key: "ec-dlq-reason", Value: []byte("bad")}}}
		require.NoError(t, tx.ProduceSync(t.Context(), r).FirstErr())
	}
	require.NoError(t, tx.EndTransaction(t.Context(), kgo.TryCommit))

	start := time.Now()
	recs, next, err := d.List(t.Context(), admin.DLQQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Empty(t, next)
	require.Less(t, time.Since(start), d.PollTimeout, "read to the marker, not until the poll timed out")
}
