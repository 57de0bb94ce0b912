package clientlib_test

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// newCluster starts an in-process Kafka with the control topic.
func newCluster(t *testing.T, partitions int32) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, clientlib.DefaultControlTopic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func newProducer(t *testing.T, c *kfake.Cluster, opts ...clientlib.Option) *clientlib.Producer {
	t.Helper()
	p, err := clientlib.NewProducer(append([]clientlib.Option{clientlib.WithBrokers(c.ListenAddrs()...)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// readControl consumes the control topic from the start until it has n
// records, ordered by partition and offset.
func readControl(t *testing.T, c *kfake.Cluster, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(clientlib.DefaultControlTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "waiting for %d control records, have %d", n, len(recs))
		fs.EachError(func(_ string, _ int32, err error) { require.NoError(t, err) })
		recs = append(recs, fs.Records()...)
	}
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].Partition != recs[j].Partition {
			return recs[i].Partition < recs[j].Partition
		}
		return recs[i].Offset < recs[j].Offset
	})
	return recs
}

func decode(t *testing.T, r *kgo.Record) envelope.Envelope {
	t.Helper()
	er := envelope.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		er.Headers = append(er.Headers, envelope.Header{Key: h.Key, Value: h.Value})
	}
	e, err := envelope.Decoder{}.Decode(er)
	require.NoError(t, err)
	return e
}

// failProduce makes the cluster answer the nth Produce request from now on
// (1-based) with a non-retriable error, once.
func failProduce(c *kfake.Cluster, nth int32) *atomic.Int32 {
	var seen atomic.Int32
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		if seen.Add(1) < nth {
			return nil, nil, false // kept: not handled
		}
		req := kreq.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.InvalidRecord.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return &seen
}

func message(key string) clientlib.Message {
	return clientlib.Message{
		BizID:        "order",
		Key:          key,
		Payload:      []byte(`{"order":"` + key + `"}`),
		ForwardTopic: "orders.created",
		ForwardKey:   key,
		Headers:      []clientlib.Header{{Key: "traceparent", Value: []byte("00-1")}},
		CheckAfter:   1500 * time.Microsecond,
	}
}

func TestNewProducerOptions(t *testing.T) {
	t.Parallel()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	cases := []struct {
		name string
		opts []clientlib.Option
		want string
	}{
		{"nothing", nil, "no Kafka given: use WithBrokers or WithClient"},
		{"empty brokers", []clientlib.Option{clientlib.WithBrokers()}, "no Kafka given"},
		{"empty broker", []clientlib.Option{clientlib.WithBrokers("a:9092", "")}, "WithBrokers: broker 1 is empty"},
		{"both", []clientlib.Option{clientlib.WithBrokers("a:9092"), clientlib.WithClient(cl)}, "both given"},
		{"kgo options with client", []clientlib.Option{clientlib.WithClient(cl), clientlib.WithKgoOptions(kgo.ClientID("x"))}, "WithKgoOptions"},
		{"empty topic", []clientlib.Option{clientlib.WithBrokers("a:9092"), clientlib.WithControlTopic("")}, "WithControlTopic: empty"},
		{"bad verify", []clientlib.Option{clientlib.WithBrokers("a:9092"), clientlib.WithDefaultVerify("ftp://x/y")}, "WithDefaultVerify"},
		{"zero decision timeout", []clientlib.Option{clientlib.WithBrokers("a:9092"), clientlib.WithDecisionTimeout(0)}, "WithDecisionTimeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := clientlib.NewProducer(tc.opts...)
			require.Nil(t, p)
			require.ErrorContains(t, err, "new producer: ")
			require.ErrorContains(t, err, tc.want)
		})
	}
	p, err := clientlib.NewProducer(clientlib.WithBrokers("a:9092"), clientlib.WithKgoOptions(kgo.ClientID("x")),
		clientlib.WithDefaultVerify("http://svc/check"))
	require.NoError(t, err)
	require.Equal(t, clientlib.DefaultControlTopic, p.ControlTopic())
	p.Close()
	p.Close() // idempotent
}

func TestPrepareCommitWireFormat(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	p := newProducer(t, c, clientlib.WithDefaultVerify("http://order-svc:8080/check"))
	ctx := t.Context()
	require.NoError(t, p.Prepare(ctx, message("42")))
	require.NoError(t, p.Commit(ctx, "order", "42"))
	require.NoError(t, p.Rollback(ctx, "order", "43"))

	recs := readControl(t, c, 3)
	require.Equal(t, envelope.Envelope{
		Type: envelope.Prepare, BizID: "order", MessageKey: "42", Payload: []byte(`{"order":"42"}`),
		ForwardTopic: "orders.created", ForwardKey: "42", Verify: "http://order-svc:8080/check",
		CheckAfter: 2 * time.Millisecond, // rounded up
		Headers:    []envelope.Header{{Key: "traceparent", Value: []byte("00-1")}},
	}, decode(t, recs[0]))
	require.Equal(t, envelope.Envelope{Type: envelope.Commit, BizID: "order", MessageKey: "42"}, decode(t, recs[1]))
	require.Equal(t, envelope.Envelope{Type: envelope.Rollback, BizID: "order", MessageKey: "43"}, decode(t, recs[2]))
	for _, r := range recs {
		require.Equal(t, clientlib.DefaultControlTopic, r.Topic)
	}
}

func TestPrepareOwnVerifyWins(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	p := newProducer(t, c, clientlib.WithDefaultVerify("http://default/check"), clientlib.WithControlTopic(clientlib.DefaultControlTopic))
	m := message("1")
	m.Verify = "tri://10.0.0.5:50051/com.shop.Verify/verifyMessage"
	require.NoError(t, p.Prepare(t.Context(), m))
	require.Equal(t, m.Verify, decode(t, readControl(t, c, 1)[0]).Verify)
}

// TestPrepareRegistryVerify: a Dubbo service named by its ZooKeeper
// registry (zookeeper://) travels in ec-verify as written, and it is the
// registry endpoint the center reads from it; a registry form the center
// refuses is refused before anything is produced.
func TestPrepareRegistryVerify(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	p := newProducer(t, c)
	m := message("1")
	m.Verify = "zookeeper://zk1:2181/com.shop.TxChecker?version=1.0.0&group=order&protocol=tri&method=check&bizid=int&backup=zk2:2182,zk3"
	require.NoError(t, p.Prepare(t.Context(), m))
	got := decode(t, readControl(t, c, 1)[0])
	require.Equal(t, m.Verify, got.Verify)
	ep, err := checkback.ParseEndpoint(got.Verify)
	require.NoError(t, err)
	require.Equal(t, checkback.ProtoRegistry, ep.Protocol)
	require.Equal(t, []string{"zk1:2181", "zk2:2182", "zk3:2181"}, ep.Registry)
	require.Equal(t, "com.shop.TxChecker", ep.Interface)
	require.Equal(t, "check", ep.Method)
	require.Equal(t, "1.0.0", ep.Version)
	require.Equal(t, "order", ep.Group)
	require.Equal(t, checkback.ProtoTriple, ep.Via)
	require.Equal(t, checkback.BizIDInt, ep.BizID)

	produced := failProduce(c, 1)
	for _, bad := range []string{
		"zookeeper://zk1:2181", // no interface
		"zookeeper://zk1:2181/com.shop.TxChecker?protocol=dubbo", // a protocol the center does not speak
		"zookeeper://zk1:2181/com.shop.TxChecker?backup=zk2:x",   // bad backup server
		"nacos://nacos:8848/com.shop.TxChecker",                  // another registry
	} {
		m.Verify = bad
		err := p.Prepare(t.Context(), m)
		require.ErrorIs(t, err, envelope.ErrInvalid, bad)
		require.ErrorContains(t, err, "ec-verify", bad)
	}
	require.Zero(t, produced.Load())
}

func TestPrepareInvalidMessage(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	produced := failProduce(c, 1) // counts produce requests; none expected
	p := newProducer(t, c)
	for name, m := range map[string]clientlib.Message{
		"no topic":     {BizID: "order", Key: "1"},
		"colon in biz": {BizID: "a:b", Key: "1", ForwardTopic: "t"},
		"no key":       {BizID: "order", ForwardTopic: "t"},
	} {
		err := p.Prepare(t.Context(), m)
		require.ErrorIs(t, err, envelope.ErrInvalid, name)
		require.ErrorContains(t, err, "prepare ", name)
	}
	require.ErrorIs(t, p.Commit(t.Context(), "", "1"), envelope.ErrInvalid)
	require.ErrorIs(t, p.Rollback(t.Context(), "b", ""), envelope.ErrInvalid)
	require.Zero(t, produced.Load())
}

func TestBrokerErrorsAreWrapped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		send func(context.Context, *clientlib.Producer) error
		want string
	}{
		{"prepare", func(ctx context.Context, p *clientlib.Producer) error { return p.Prepare(ctx, message("7")) }, "prepare order:7: produce to eventcenter.control: "},
		{"commit", func(ctx context.Context, p *clientlib.Producer) error { return p.Commit(ctx, "order", "7") }, "commit order:7: produce to eventcenter.control: "},
		{"rollback", func(ctx context.Context, p *clientlib.Producer) error { return p.Rollback(ctx, "order", "7") }, "rollback order:7: produce to eventcenter.control: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, 1)
			failProduce(c, 1)
			p := newProducer(t, c)
			err := tc.send(t.Context(), p)
			require.ErrorIs(t, err, kerr.InvalidRecord)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestProduceHonoursContext(t *testing.T) {
	t.Parallel()
	p, err := clientlib.NewProducer(clientlib.WithBrokers("127.0.0.1:1")) // nothing listens
	require.NoError(t, err)
	defer p.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err = p.Commit(ctx, "order", "1")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "commit order:1")
}

func TestTransactCommits(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	p := newProducer(t, c)
	ran := false
	require.NoError(t, p.Transact(t.Context(), message("1"), func(context.Context) error { ran = true; return nil }))
	require.True(t, ran)
	recs := readControl(t, c, 2)
	require.Equal(t, envelope.Prepare, decode(t, recs[0]).Type)
	require.Equal(t, envelope.Commit, decode(t, recs[1]).Type)
}

func TestTransactCommitsAfterContextCanceled(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	p := newProducer(t, c)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	require.NoError(t, p.Transact(ctx, message("1"), func(context.Context) error { cancel(); return nil }))
	recs := readControl(t, c, 2)
	require.Equal(t, envelope.Commit, decode(t, recs[1]).Type)
}

func TestTransactRollsBackOnError(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	p := newProducer(t, c)
	boom := errors.New("boom")
	err := p.Transact(t.Context(), message("1"), func(context.Context) error { return boom })
	require.Equal(t, boom, err) // fn's error, as is
	recs := readControl(t, c, 2)
	require.Equal(t, envelope.Prepare, decode(t, recs[0]).Type)
	require.Equal(t, envelope.Rollback, decode(t, recs[1]).Type)
}

func TestTransactRollbackUnsent(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	p := newProducer(t, c)
	failProduce(c, 2)
	boom := errors.New("boom")
	err := p.Transact(t.Context(), message("1"), func(context.Context) error { return boom })
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, err, kerr.InvalidRecord)
	require.ErrorContains(t, err, "rollback order:1")
	require.ErrorContains(t, err, "check-back will settle")
	require.NotErrorIs(t, err, clientlib.ErrCommitUnsent)
}

func TestTransactCommitUnsent(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	p := newProducer(t, c)
	failProduce(c, 2)
	ran := false
	err := p.Transact(t.Context(), message("1"), func(context.Context) error { ran = true; return nil })
	require.True(t, ran)
	require.ErrorIs(t, err, clientlib.ErrCommitUnsent)
	require.ErrorIs(t, err, kerr.InvalidRecord)
	require.ErrorContains(t, err, "commit order:1")
	// Only the prepare is in the log; check-back settles the rest.
	recs := readControl(t, c, 1)
	require.Equal(t, envelope.Prepare, decode(t, recs[0]).Type)
}

func TestTransactPrepareFails(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	p := newProducer(t, c)
	failProduce(c, 1)
	ran := false
	err := p.Transact(t.Context(), message("1"), func(context.Context) error { ran = true; return nil })
	require.False(t, ran)
	require.ErrorIs(t, err, kerr.InvalidRecord)
	require.ErrorContains(t, err, "transact: prepare order:1")
	// A rollback is sent in case the prepare landed after all.
	recs := readControl(t, c, 1)
	require.Equal(t, envelope.Rollback, decode(t, recs[0]).Type)

	// An invalid message: nothing runs, nothing is sent.
	err = p.Transact(t.Context(), clientlib.Message{BizID: "order", Key: "2"}, func(context.Context) error { ran = true; return nil })
	require.False(t, ran)
	require.ErrorIs(t, err, envelope.ErrInvalid)
}

func TestWithClientIsNotClosed(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer cl.Close()
	p, err := clientlib.NewProducer(clientlib.WithClient(cl))
	require.NoError(t, err)
	require.NoError(t, p.Commit(t.Context(), "order", "1"))
	p.Close()
	// The caller's client still works.
	require.NoError(t, cl.ProduceSync(t.Context(), &kgo.Record{Topic: clientlib.DefaultControlTopic, Value: []byte("x")}).FirstErr())
}

// Records land on the partition Kafka's default partitioner gives their
// key (envelope.PartitionFor, checked against Kafka's murmur2 vectors in
// the envelope module), as every Kafka client computes it.
func TestRecordsLandOnKafkaMurmur2Partition(t *testing.T) {
	t.Parallel()
	const partitions = 16
	c := newCluster(t, partitions)
	p := newProducer(t, c)
	const n = 40
	for i := range n {
		require.NoError(t, p.Commit(t.Context(), "order", "key-"+strconv.Itoa(i*7919)))
	}
	recs := readControl(t, c, n)
	used := map[int32]bool{}
	for _, r := range recs {
		require.Equal(t, envelope.PartitionFor(string(r.Key), partitions), r.Partition, "key %s", r.Key)
		used[r.Partition] = true
	}
	require.Greater(t, len(used), 4, "keys spread over partitions")
}
