package containers

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
)

// Minimal copies of app/e2e's harness (a package cannot import
// another package's test files).

// produceEnvelope writes one native envelope synchronously.
func (w *world) produceEnvelope(cl *kgo.Client, env envelope.Envelope) {
	w.t.Helper()
	rec, err := envelope.Encode(env)
	require.NoError(w.t, err)
	kr := &kgo.Record{Topic: w.control, Key: rec.Key, Value: rec.Value}
	for _, h := range rec.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	require.NoError(w.t, cl.ProduceSync(w.t.Context(), kr).FirstErr())
}

func (w *world) rawClient() *kgo.Client {
	w.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.brokers...))
	require.NoError(w.t, err)
	w.t.Cleanup(cl.Close)
	return cl
}

func (w *world) producer() *clientlib.Producer {
	w.t.Helper()
	p, err := clientlib.NewProducer(clientlib.WithBrokers(w.brokers...), clientlib.WithControlTopic(w.control))
	require.NoError(w.t, err)
	w.t.Cleanup(p.Close)
	return p
}

// plan says what happens to each message of a run.
type plan struct {
	committed []string // ids that must be forwarded
	rolled    []string // ids that must never be forwarded
}

// produceMix sends n messages built by msgFor: every 10th rolled back
// (Transact with a failing local transaction), every 10th+1 written
// COMMIT-before-PREPARE as raw records, the rest committed with Transact.
func (w *world) produceMix(n int, msgFor func(i int) clientlib.Message) plan {
	w.t.Helper()
	p := w.producer()
	raw := w.rawClient()
	var pl plan
	for i := range n {
		msg := msgFor(i)
		switch i % 10 {
		case 0:
			err := p.Transact(w.t.Context(), msg, func(context.Context) error { return errLocalTx })
			require.ErrorIs(w.t, err, errLocalTx)
			pl.rolled = append(pl.rolled, msg.ID())
			continue
		case 1:
			w.produceEnvelope(raw, envelope.Envelope{Type: envelope.Commit, BizID: msg.BizID, MessageKey: msg.Key})
			w.produceEnvelope(raw, envelope.Envelope{
				Type: envelope.Prepare, BizID: msg.BizID, MessageKey: msg.Key, Payload: msg.Payload,
				ForwardTopic: msg.ForwardTopic, ForwardKey: msg.ForwardKey, Target: msg.Target, Tag: msg.Tag, Headers: msg.Headers,
			})
		default:
			require.NoError(w.t, p.Transact(w.t.Context(), msg, func(context.Context) error { return nil }))
		}
		pl.committed = append(pl.committed, msg.ID())
	}
	return pl
}

// forwarded is one record read from a Kafka business topic.
type forwarded struct {
	Key     string
	Value   string
	Headers map[string]string
}

// collector reads Kafka topics from the start and keeps records by ec-id.
type collector struct {
	mu   sync.Mutex
	byID map[string][]forwarded
}

func (w *world) collect(topics ...string) *collector {
	w.t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(w.brokers...),
		kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	require.NoError(w.t, err)
	c := &collector{byID: map[string][]forwarded{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				f := forwarded{Key: string(r.Key), Value: string(r.Value), Headers: map[string]string{}}
				for _, h := range r.Headers {
					f.Headers[h.Key] = string(h.Value)
				}
				c.mu.Lock()
				c.byID[f.Headers["ec-id"]] = append(c.byID[f.Headers["ec-id"]], f)
				c.mu.Unlock()
			})
		}
	}()
	w.t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	return c
}

func (c *collector) get(id string) []forwarded {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]forwarded(nil), c.byID[id]...)
}

func (c *collector) ids() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID)
}

func (c *collector) missing(ids []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, id := range ids {
		if len(c.byID[id]) == 0 {
			out = append(out, id)
		}
	}
	return out
}

// waitFor waits until every id was forwarded at least once.
func (c *collector) waitFor(t *testing.T, ids []string, timeout time.Duration) {
	t.Helper()
	var miss []string
	if !eventually(timeout, func() bool { miss = c.missing(ids); return len(miss) == 0 }) {
		t.Fatalf("%d of %d messages not forwarded after %s (e.g. %s)", len(miss), len(ids), timeout, miss[0])
	}
}

// rmqCollector reads a RocketMQ topic with the real push consumer and
// keeps messages by their ec-id property.
type rmqCollector struct {
	mu   sync.Mutex
	byID map[string][]*primitive.MessageExt
}

func collectRMQ(t *testing.T, nameServer, topic string) *rmqCollector {
	t.Helper()
	ch := rmqtest.Consume(t, nameServer, topic, rmqtest.InstanceName("tc-reader"))
	c := &rmqCollector{byID: map[string][]*primitive.MessageExt{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case m := <-ch:
				c.mu.Lock()
				id := m.GetProperty(envelope.HeaderID)
				c.byID[id] = append(c.byID[id], m)
				c.mu.Unlock()
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return c
}

func (c *rmqCollector) get(id string) []*primitive.MessageExt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*primitive.MessageExt(nil), c.byID[id]...)
}

func (c *rmqCollector) ids() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID)
}

func (c *rmqCollector) waitFor(t *testing.T, ids []string, timeout time.Duration) {
	t.Helper()
	var miss []string
	ok := eventually(timeout, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		miss = miss[:0]
		for _, id := range ids {
			if len(c.byID[id]) == 0 {
				miss = append(miss, id)
			}
		}
		return len(miss) == 0
	})
	if !ok {
		t.Fatalf("%d of %d messages not consumed from RocketMQ after %s (e.g. %s)", len(miss), len(ids), timeout, miss[0])
	}
}

// producerServer is a producer's check-back endpoint (clientlib's
// handler): commit for keys starting with "commit", rollback for keys
// starting with "rollback", unknown otherwise.
type producerServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls int
}

func newProducerServer(t *testing.T) *producerServer {
	p := &producerServer{}
	h := clientlib.NewCheckbackHandler(func(_ context.Context, _, key string) (clientlib.Decision, error) {
		p.mu.Lock()
		p.calls++
		p.mu.Unlock()
		switch {
		case strings.HasPrefix(key, "commit"):
			return clientlib.DecisionCommit, nil
		case strings.HasPrefix(key, "rollback"):
			return clientlib.DecisionRollback, nil
		}
		return clientlib.DecisionUnknown, errors.New("no such transaction")
	})
	p.Server = httptest.NewServer(h)
	t.Cleanup(p.Close)
	return p
}

func (p *producerServer) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

func payload(key string, size int) []byte {
	s := "payload-" + key
	if len(s) < size {
		s += strings.Repeat(" and more", (size-len(s))/9+1)
	}
	return []byte(s)
}

func keyOf(id string) string {
	_, key, _ := envelope.SplitKey(id)
	return key
}
