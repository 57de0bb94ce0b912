package ingest

import (
	"context"
	"errors"
	"fmt"
	"github.com/eventcenter/eventcenter/forwarder"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/memstore"
)

const (
	waitFor = 20 * time.Second
	tick    = 10 * time.Millisecond
)

// env is one in-process Kafka cluster with the control and dead-letter
// topics, a producer and an admin client.
type env struct {
	t          testing.TB
	cluster    *kfake.Cluster
	addrs      []string
	prod       *kgo.Client
	adm        *kadm.Client
	topic, dlq string
	group      string
	parts      int32
}

func newEnv(t testing.TB, partitions int32) *env {
	t.Helper()
	e := &env{t: t, topic: "ec.control", dlq: "ec.control.dlq", group: "ec-test", parts: partitions}
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.SeedTopics(partitions, e.topic, e.dlq),
		kfake.GroupMinSessionTimeout(100*time.Millisecond),
	)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	e.cluster = c
	e.addrs = c.ListenAddrs()
	e.prod, err = kgo.NewClient(kgo.SeedBrokers(e.addrs...), kgo.ProducerLinger(0))
	require.NoError(t, err)
	t.Cleanup(e.prod.Close)
	e.adm = kadm.NewClient(e.prod)
	return e
}

// topicID returns a topic's id (produce v13+ names topics by id).
func (e *env) topicID(topic string) [16]byte {
	e.t.Helper()
	td, err := e.adm.ListTopics(e.t.Context(), topic)
	require.NoError(e.t, err)
	d, ok := td[topic]
	require.True(e.t, ok)
	require.NoError(e.t, d.Err)
	return d.ID
}

// fastGroup makes group membership changes quick in tests. The session
// is long enough that a loaded machine (-race, tests in parallel) does not
// miss heartbeats for all of it and lose the member's partitions mid-test;
// the ingesters these tests stop leave the group, so none waits it out.
func fastGroup() []kgo.Opt {
	return []kgo.Opt{
		kgo.SessionTimeout(20 * time.Second),
		kgo.HeartbeatInterval(50 * time.Millisecond),
		kgo.RebalanceTimeout(5 * time.Second),
		kgo.FetchMaxWait(50 * time.Millisecond),
	}
}

// config is an ingester configuration for e.
func (e *env) config() Config {
	return Config{
		Brokers:       e.addrs,
		ControlTopic:  e.topic,
		Group:         e.group,
		RetryMin:      5 * time.Millisecond,
		RetryMax:      50 * time.Millisecond,
		ClientOptions: fastGroup(),
		Registerer:    prometheus.NewRegistry(),
		Logger:        slog.New(slog.NewTextHandler(e.t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// testSendLease is the send lease of the fast path in these tests (the
// forwarder's default Lease).
const testSendLease = 30 * time.Second

// start builds and starts an ingester; it is stopped at cleanup. With fwd
// set, st is wrapped in the forwarder's fast path handing over to fwd.
func (e *env) start(cfg Config, st Store, fwd forwarder.Handoff, owned *Ownership) *Ingester {
	e.t.Helper()
	if fwd != nil {
		st = forwarder.NewApplier(st, fwd, testSendLease)
	}
	in, err := New(cfg, st, owned)
	require.NoError(e.t, err)
	require.NoError(e.t, in.Start(e.t.Context()))
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = in.Stop(ctx)
	})
	return in
}

func (e *env) produce(rs ...*kgo.Record) {
	e.t.Helper()
	for _, r := range rs {
		if r.Topic == "" {
			r.Topic = e.topic
		}
	}
	require.NoError(e.t, e.prod.ProduceSync(e.t.Context(), rs...).FirstErr())
}

// committedAll tells whether the group committed every partition to its end.
func (e *env) committedAll() bool {
	ctx := e.t.Context()
	ends, err := e.adm.ListEndOffsets(ctx, e.topic)
	if err != nil {
		return false
	}
	offs, err := e.adm.FetchOffsets(ctx, e.group)
	if err != nil {
		return false
	}
	ok := true
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset == 0 {
			return
		}
		c, found := offs.Lookup(o.Topic, o.Partition)
		if !found || c.At != o.Offset {
			ok = false
		}
	})
	return ok
}

// committedCount is the sum of committed offsets of the group.
func (e *env) committedCount() int64 {
	offs, err := e.adm.FetchOffsets(e.t.Context(), e.group)
	require.NoError(e.t, err)
	var n int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == e.topic && o.At > 0 {
			n += o.At
		}
	})
	return n
}

// readDLQ reads n records from the dead-letter topic.
func (e *env) readDLQ(n int) []*kgo.Record {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addrs...), kgo.ConsumeTopics(e.dlq),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	require.NoError(e.t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(e.t.Context(), waitFor)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(e.t, ctx.Err(), "read %d of %d dead letters", len(got), n)
		got = append(got, fs.Records()...)
	}
	return got
}

// Control records, native format.

func prepareRec(biz, key string, payload []byte, extra ...kgo.RecordHeader) *kgo.Record {
	hs := []kgo.RecordHeader{
		{Key: envelope.HeaderType, Value: []byte("prepare")},
		{Key: envelope.HeaderBiz, Value: []byte(biz)},
		{Key: envelope.HeaderKey, Value: []byte(key)},
		{Key: envelope.HeaderTopic, Value: []byte("orders")},
	}
	return &kgo.Record{Key: []byte(envelope.Key(biz, key)), Value: payload, Headers: append(hs, extra...)}
}

func decisionRec(biz, key, typ string) *kgo.Record {
	return &kgo.Record{Key: []byte(envelope.Key(biz, key)), Headers: []kgo.RecordHeader{
		{Key: envelope.HeaderType, Value: []byte(typ)},
		{Key: envelope.HeaderBiz, Value: []byte(biz)},
		{Key: envelope.HeaderKey, Value: []byte(key)},
	}}
}

// memStore is the in-memory store (store/memstore) with the failure
// injection, gate and records these tests use.
type memStore struct {
	*memstore.Store

	// failures left to inject; negative: fail until set to 0.
	failures atomic.Int64
	errs     atomic.Int64
	// gate, when set, is waited on by Apply (after signalling entered).
	gate    chan struct{}
	entered chan struct{}

	mu       sync.Mutex
	applies  []store.ApplyRequest
	outcomes []store.ChangeOutcome
}

var errStoreDown = errors.New("store down")

func newMemStore() *memStore {
	return &memStore{Store: memstore.New(nil)}
}

func (s *memStore) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	if s.gate != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		select {
		case <-s.gate:
		case <-ctx.Done():
			return store.ApplyResult{}, ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return store.ApplyResult{}, err
	}
	if n := s.failures.Load(); n != 0 {
		if n > 0 {
			s.failures.Add(-1)
		}
		s.errs.Add(1)
		return store.ApplyResult{}, errStoreDown
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.Store.Apply(ctx, req)
	if err != nil {
		return res, err
	}
	s.applies = append(s.applies, req)
	s.outcomes = append(s.outcomes, res.Outcomes...)
	return res, nil
}

func (s *memStore) get(biz, key string) (state.Message, bool) {
	m, err := s.Get(context.Background(), biz, key)
	return m, err == nil
}

// countStatus counts rows with a status (and a body when body is set).
func (s *memStore) countStatus(st state.Status, body bool) int {
	n := 0
	f := store.Filter{Status: st, Limit: 1000}
	for {
		p, err := s.List(context.Background(), f)
		if err != nil {
			panic(err)
		}
		for _, m := range p.Messages {
			if !body || m.HasBody {
				n++
			}
		}
		if p.Next == "" {
			return n
		}
		f.Cursor = p.Next
	}
}

func (s *memStore) applyCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.applies)
}

// effects counts the outcomes of every applied change by effect.
func (s *memStore) effects() map[state.Effect]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[state.Effect]int{}
	for _, o := range s.outcomes {
		m[o.Effect]++
	}
	return m
}

// handoffs records what was handed to the forwarder.
type handoffs struct {
	mu   sync.Mutex
	msgs []state.Message
}

func (h *handoffs) Handoff(msgs []state.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, msgs...)
}

func (h *handoffs) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.msgs)
}

func (h *handoffs) all() []state.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs)
}

// lifecycle produces PREPARE and COMMIT of n messages "biz:k<i>".
func (e *env) lifecycle(biz string, from, n int) {
	e.t.Helper()
	var rs []*kgo.Record
	for i := from; i < from+n; i++ {
		key := "k" + strconv.Itoa(i)
		rs = append(rs, prepareRec(biz, key, fmt.Appendf(nil, "payload %d", i)), decisionRec(biz, key, "commit"))
	}
	e.produce(rs...)
}

// Broker error injection (kfake control functions).

type (
	kmsgRequest  = kmsg.Request
	kmsgResponse = kmsg.Response
)

const (
	kmsgOffsetCommitKey = kmsg.OffsetCommit
	kmsgProduceKey      = kmsg.Produce
)

// failOffsetCommit answers an offset commit with a non-retriable error for
// every partition.
func failOffsetCommit(kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// failProduceTo answers a produce request that writes to topic with code
// (an error franz-go does not retry itself); ok is false for other
// requests.
func failProduceTo(kreq kmsg.Request, topic string, id [16]byte, code int16) (kmsg.Response, bool) {
	req := kreq.(*kmsg.ProduceRequest)
	found := false
	for _, t := range req.Topics {
		if t.Topic == topic || t.TopicID == id {
			found = true
		}
	}
	if !found {
		return nil, false
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, true
}
