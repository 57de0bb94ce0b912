package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
)

// Cluster tests: several in-process centers share one kfake broker and one
// PostgreSQL schema, in one consumer group.

const clusterMaxAttempts = 5

// countingCheckback is a producer's check-back endpoint (clientlib's
// handler) that answers by key prefix ("cbcommit-" commit, "cbrollback-"
// rollback, anything else unknown) and counts calls per message key.
type countingCheckback struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
	times map[string][]time.Time
}

func newCountingCheckback(t *testing.T) *countingCheckback {
	t.Helper()
	s := &countingCheckback{calls: map[string]int{}, times: map[string][]time.Time{}}
	s.Server = httptest.NewServer(clientlib.NewCheckbackHandler(func(_ context.Context, _, key string) (clientlib.Decision, error) {
		s.mu.Lock()
		s.calls[key]++
		s.times[key] = append(s.times[key], time.Now())
		s.mu.Unlock()
		switch {
		case strings.HasPrefix(key, "cbcommit-"):
			return clientlib.DecisionCommit, nil
		case strings.HasPrefix(key, "cbrollback-"):
			return clientlib.DecisionRollback, nil
		}
		return clientlib.DecisionUnknown, nil
	}))
	t.Cleanup(s.Close)
	return s
}

// callsOf says when the producer saw check-backs of a message.
func (s *countingCheckback) callsOf(id string) string {
	_, key, _ := envelope.SplitKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	var at []string
	for _, x := range s.times[key] {
		at = append(at, x.UTC().Format("15:04:05.000"))
	}
	return fmt.Sprintf("check-back calls seen by the producer: %d %v", len(at), at)
}

func (s *countingCheckback) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// clusterEnv is newEnv on PostgreSQL with quick check-backs against srv and
// quick metadata refreshes (new partitions are consumed within a second).
func clusterEnv(t *testing.T, srv *countingCheckback) *env {
	t.Helper()
	return newEnv(t, "postgres", func(c *config.Config) {
		c.Kafka.SessionTimeout = 6 * time.Second
		c.Kafka.MetadataMaxAge = time.Second
		c.Checkback.FirstDelay = 300 * time.Millisecond
		c.Checkback.BackoffBase = 200 * time.Millisecond
		c.Checkback.BackoffCap = 400 * time.Millisecond
		c.Checkback.MaxAttempts = clusterMaxAttempts
		c.Checkback.Breaker.Failures = 1000
		c.Checkback.Allow = []string{srv.URL}
	})
}

// stream produces messages until stop is closed: by i%10, 0 and 5 are rolled
// back by Transact, 1 is COMMIT-before-PREPARE (raw records), 2 is a PREPARE
// the check-back commits, 3 a PREPARE the check-back rolls back, the rest
// are committed by Transact.
type stream struct {
	mu        sync.Mutex
	committed []string
	rolled    []string
	checked   []string // keys decided by a check-back
	n         atomic.Int64
	done      chan struct{}
	err       error
}

func (e *env) startStream(t *testing.T, prefix string, srv *countingCheckback, workers int, stop <-chan struct{}) *stream {
	t.Helper()
	p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic),
		clientlib.WithKgoOptions(kgo.MetadataMinAge(100*time.Millisecond), kgo.MetadataMaxAge(time.Second)))
	require.NoError(t, err)
	raw := e.raw()
	s := &stream{done: make(chan struct{})}
	var wg sync.WaitGroup
	var errMu sync.Mutex
	for w := range workers {
		wg.Go(func() {
			for i := w; ; i += workers {
				select {
				case <-stop:
					return
				default:
				}
				if err := s.one(t.Context(), p, raw, srv, prefix, i); err != nil {
					errMu.Lock()
					s.err = errors.Join(s.err, err)
					errMu.Unlock()
					return
				}
				s.n.Add(1)
			}
		})
	}
	go func() {
		wg.Wait()
		p.Close()
		close(s.done)
	}()
	return s
}

func (s *stream) one(ctx context.Context, p *clientlib.Producer, raw *kgo.Client, srv *countingCheckback, prefix string, i int) error {
	kind := i % 10
	names := map[int]string{0: "rb", 5: "rb", 1: "cbp", 2: "cbcommit", 3: "cbrollback"}
	name, ok := names[kind]
	if !ok {
		name = "tx"
	}
	key := fmt.Sprintf("%s-%s-%d", name, prefix, i)
	msg := clientlib.Message{
		BizID: "orders", Key: key, Payload: []byte("payload-" + key), ForwardTopic: businessTopic,
		ForwardKey: "fk-" + key, Headers: []clientlib.Header{{Key: "trace", Value: []byte("t-" + key)}},
	}
	record := func(list *[]string) {
		s.mu.Lock()
		*list = append(*list, msg.ID())
		s.mu.Unlock()
	}
	switch kind {
	case 0, 5:
		err := p.Transact(ctx, msg, func(context.Context) error { return errLocalTx })
		if !errors.Is(err, errLocalTx) {
			return fmt.Errorf("message %s: %w", key, err)
		}
		record(&s.rolled)
		return nil
	case 1:
		for _, env := range []envelope.Envelope{
			{Type: envelope.Commit, BizID: msg.BizID, MessageKey: key},
			{Type: envelope.Prepare, BizID: msg.BizID, MessageKey: key, Payload: msg.Payload,
				ForwardTopic: msg.ForwardTopic, ForwardKey: msg.ForwardKey, Headers: msg.Headers},
		} {
			rec, err := envelope.Encode(env)
			if err != nil {
				return err
			}
			kr := &kgo.Record{Topic: controlTopic, Key: rec.Key, Value: rec.Value}
			for _, h := range rec.Headers {
				kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
			}
			if err := raw.ProduceSync(ctx, kr).FirstErr(); err != nil {
				return fmt.Errorf("message %s: %w", key, err)
			}
		}
		record(&s.committed)
	case 2, 3:
		msg.Verify = srv.URL + "/checkback"
		if err := p.Prepare(ctx, msg); err != nil {
			return fmt.Errorf("message %s: %w", key, err)
		}
		if kind == 2 {
			record(&s.committed)
		} else {
			record(&s.rolled)
		}
		record(&s.checked)
	default:
		if err := p.Transact(ctx, msg, func(context.Context) error { return nil }); err != nil {
			return fmt.Errorf("message %s: %w", key, err)
		}
		record(&s.committed)
	}
	return nil
}

func (s *stream) wait(t *testing.T) plan {
	t.Helper()
	<-s.done
	require.NoError(t, s.err)
	s.mu.Lock()
	defer s.mu.Unlock()
	return plan{committed: append([]string(nil), s.committed...), rolled: append([]string(nil), s.rolled...)}
}

// startStoppableCenter is startCenter for a center the test stops itself
// (Center.Stop may run only once); stop is idempotent and also runs at
// cleanup.
func (e *env) startStoppableCenter() (*center.Center, func()) {
	e.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(e.t, err)
	c, err := center.New(e.t.Context(), e.cfg, center.Options{Logger: testLogger(e.t), KafkaOptions: fastGroup(), Listener: l})
	require.NoError(e.t, err)
	require.NoError(e.t, c.Start(e.t.Context()))
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(e.t, c.Stop(ctx))
		})
	}
	e.t.Cleanup(stop)
	return c, stop
}

// sent is a center's count of messages sent to the business topic.
func sent(t *testing.T, c *center.Center) float64 {
	t.Helper()
	return testutil.ToFloat64(counter(t, c, "eventcenter_forward_total", map[string]string{"target": "kafka", "result": "sent"}))
}

// waitOwnedBy waits until the centers together own every partition of the
// control topic, each exactly once, and every center owns at least one.
func waitOwnedBy(t *testing.T, n int, cs ...*center.Center) {
	t.Helper()
	require.Eventually(t, func() bool {
		seen := map[int32]int{}
		for _, c := range cs {
			ps := c.Owned.Partitions()
			if len(ps) == 0 {
				return false
			}
			for _, p := range ps {
				seen[p]++
			}
		}
		if len(seen) != n {
			return false
		}
		for _, k := range seen {
			if k != 1 {
				return false
			}
		}
		return true
	}, time.Minute, 20*time.Millisecond, "partitions never split across the centers")
}

// checkRolledBackInStore waits until every rolled-back message is
// ROLLED_BACK in the store (so "not forwarded" is not just "not yet").
func checkRolledBackInStore(t *testing.T, c *center.Center, ids []string) {
	t.Helper()
	for _, id := range ids {
		biz, key, _ := envelope.SplitKey(id)
		require.Eventually(t, func() bool {
			m, err := c.Store.Get(t.Context(), biz, key)
			return err == nil && m.Status == state.RolledBack
		}, time.Minute, 20*time.Millisecond, "%s never rolled back", id)
	}
}

// checkCheckbackCalls asserts no message was called more often than the
// attempt limit and returns how many messages were called more than once.
func checkCheckbackCalls(t *testing.T, srv *countingCheckback, checked []string) (dups int) {
	t.Helper()
	calls := srv.snapshot()
	for _, id := range checked {
		_, key, _ := envelope.SplitKey(id)
		n := calls[key]
		require.LessOrEqual(t, n, clusterMaxAttempts, "check-backs of %s", id)
		if n > 1 {
			dups++
		}
	}
	return dups
}

// TestClusterJoinAndLeaveMidStream: one center runs, a second and a third
// join while producers keep sending, then the first leaves. Nothing is lost,
// nothing rolled back is forwarded, every center did part of the work, and
// check-backs stay within the limit.
func TestClusterJoinAndLeaveMidStream(t *testing.T) {
	t.Parallel()
	srv := newCountingCheckback(t)
	e := clusterEnv(t, srv)
	col := e.collect(businessTopic)
	a, stopA := e.startStoppableCenter()
	waitOwnedBy(t, partitions, a)

	stop := make(chan struct{})
	s := e.startStream(t, "jl", srv, 4, stop)
	waitProduced := func(n int64) {
		require.Eventually(t, func() bool { return s.n.Load() >= n }, time.Minute, 10*time.Millisecond)
	}
	waitProduced(300)
	b := e.startCenter(center.Options{})
	waitOwnedBy(t, partitions, a, b)
	t.Logf("after the join: a owns %v, b owns %v", a.Owned.Partitions(), b.Owned.Partitions())
	waitProduced(s.n.Load() + 300)
	c := e.startCenter(center.Options{})
	waitOwnedBy(t, partitions, a, b, c)
	t.Logf("after the second join: a %v, b %v, c %v", a.Owned.Partitions(), b.Owned.Partitions(), c.Owned.Partitions())
	waitProduced(s.n.Load() + 300)

	// a leaves mid-stream (a graceful stop: ingest commits, sends drain).
	sentA := sent(t, a)
	t.Logf("a stops at %s", time.Now().UTC().Format("15:04:05.000"))
	stopA()
	t.Logf("a stopped at %s", time.Now().UTC().Format("15:04:05.000"))
	waitOwnedBy(t, partitions, b, c)
	t.Logf("after a left: b %v, c %v", b.Owned.Partitions(), c.Owned.Partitions())
	waitProduced(s.n.Load() + 300)
	close(stop)
	pl := s.wait(t)

	// Every committed message within two minutes; one a center left
	// leased arrives after that lease at the latest, and is shown with
	// its row's history.
	col.waitForEach(t, b.Store, pl.committed, 20*time.Second, 2*time.Minute,
		e.cfg.Checkback.Lease+e.cfg.Forward.Lease+30*time.Second, srv.callsOf)
	checkRolledBackInStore(t, b, pl.rolled)
	checkForwarded(t, col, pl)
	sentB, sentC := sent(t, b), sent(t, c)
	t.Logf("forwarded per instance: a %.0f, b %.0f, c %.0f", sentA, sentB, sentC)
	require.Positive(t, sentA, "a forwarded nothing")
	require.Positive(t, sentB, "b forwarded nothing")
	require.Positive(t, sentC, "c forwarded nothing")
	s.mu.Lock()
	checked := append([]string(nil), s.checked...)
	s.mu.Unlock()
	dups := checkCheckbackCalls(t, srv, checked)
	t.Logf("%d messages decided by check-back, %d of them called more than once (rebalances)", len(checked), dups)
}

// TestClusterSteadyChecksBackOnce: with three centers in a stable group,
// each stale PREPARE is checked back exactly once (its first answer decides
// it), and the check-backs are divided among the centers.
func TestClusterSteadyChecksBackOnce(t *testing.T) {
	t.Parallel()
	srv := newCountingCheckback(t)
	e := clusterEnv(t, srv)
	col := e.collect(businessTopic)
	cs := []*center.Center{e.startCenter(center.Options{}), e.startCenter(center.Options{}), e.startCenter(center.Options{})}
	waitOwnedBy(t, partitions, cs...)

	p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic))
	require.NoError(t, err)
	defer p.Close()
	var pl plan
	for i := range 300 {
		decision := []string{"cbcommit", "cbrollback"}[i%2]
		key := fmt.Sprintf("%s-steady-%d", decision, i)
		require.NoError(t, p.Prepare(t.Context(), clientlib.Message{
			BizID: "orders", Key: key, Payload: []byte("payload-" + key), ForwardTopic: businessTopic,
			ForwardKey: "fk-" + key, Headers: []clientlib.Header{{Key: "trace", Value: []byte("t-" + key)}},
			Verify: srv.URL + "/checkback",
		}))
		if i%2 == 0 {
			pl.committed = append(pl.committed, envelope.Key("orders", key))
		} else {
			pl.rolled = append(pl.rolled, envelope.Key("orders", key))
		}
	}
	col.waitFor(t, pl.committed, time.Minute)
	checkRolledBackInStore(t, cs[0], pl.rolled)
	checkForwarded(t, col, pl)
	calls := srv.snapshot()
	for _, id := range append(append([]string(nil), pl.committed...), pl.rolled...) {
		_, key, _ := envelope.SplitKey(id)
		require.Equal(t, 1, calls[key], "check-backs of %s in a steady group", id)
	}
	var split []string
	for i, c := range cs {
		n := sumCounter(t, c, "eventcenter_checkback_total")
		split = append(split, fmt.Sprintf("center %d (partitions %v): %.0f check-backs", i, c.Owned.Partitions(), n))
	}
	t.Log(strings.Join(split, "; "))
}

// TestClusterPartitionIncrease grows the control topic while two centers
// run: PREPAREs written before the increase and their COMMIT/ROLLBACK after
// it land on different partitions, owned by different centers. The
// outcome still follows the state machine, whatever the arrival order.
func TestClusterPartitionIncrease(t *testing.T) {
	t.Parallel()
	srv := newCountingCheckback(t)
	e := clusterEnv(t, srv)
	col := e.collect(businessTopic)
	a, b := e.startCenter(center.Options{}), e.startCenter(center.Options{})
	waitOwnedBy(t, partitions, a, b)
	owner := func(p int32) string {
		switch {
		case a.Owned.Owns(p):
			return "a"
		case b.Owned.Owns(p):
			return "b"
		}
		return "?"
	}

	// Producers that notice the new partitions within a second.
	newProducer := func() *clientlib.Producer {
		p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic),
			clientlib.WithKgoOptions(kgo.MetadataMinAge(100*time.Millisecond), kgo.MetadataMaxAge(time.Second)))
		require.NoError(t, err)
		t.Cleanup(p.Close)
		return p
	}
	before := newProducer()
	const n = 200
	msg := func(i int) clientlib.Message {
		key := fmt.Sprintf("grow-%d", i)
		// A long first check-back delay keeps the PREPAREs undecided until
		// their second envelope arrives.
		return clientlib.Message{BizID: "orders", Key: key, Payload: []byte("payload-" + key), ForwardTopic: businessTopic, CheckAfter: time.Minute,
			ForwardKey: "fk-" + key, Headers: []clientlib.Header{{Key: "trace", Value: []byte("t-" + key)}}}
	}
	// Every 4th message: COMMIT before the increase, PREPARE after it
	// (commit-before-prepare across partitions). The rest: PREPARE before.
	for i := range n {
		m := msg(i)
		if i%4 == 3 {
			require.NoError(t, before.Commit(t.Context(), m.BizID, m.Key))
			continue
		}
		require.NoError(t, before.Prepare(t.Context(), m))
	}
	// Wait until the prepares are in the store, so the second envelope
	// really arrives later, on another partition.
	for i := range n {
		m := msg(i)
		require.Eventually(t, func() bool {
			_, err := a.Store.Get(t.Context(), m.BizID, m.Key)
			return err == nil
		}, time.Minute, 10*time.Millisecond)
	}

	adm := kadm.NewClient(e.raw())
	resp, err := adm.CreatePartitions(t.Context(), partitions, controlTopic)
	require.NoError(t, err)
	for _, r := range resp {
		require.NoError(t, r.Err)
	}
	const grown = 2 * partitions
	waitOwnedBy(t, grown, a, b)
	t.Logf("after the increase: a owns %v, b owns %v", a.Owned.Partitions(), b.Owned.Partitions())

	after := newProducer()
	// The producer must see 8 partitions before sending the second halves.
	require.Eventually(t, func() bool {
		cl := kadm.NewClient(e.raw())
		md, err := cl.Metadata(t.Context(), controlTopic)
		return err == nil && len(md.Topics[controlTopic].Partitions) == grown
	}, time.Minute, 50*time.Millisecond)
	var pl plan
	moved, crossOwner := 0, 0
	for i := range n {
		m := msg(i)
		switch i % 4 {
		case 0, 1: // commit after the increase
			require.NoError(t, after.Commit(t.Context(), m.BizID, m.Key))
			pl.committed = append(pl.committed, m.ID())
		case 2: // rollback after the increase
			require.NoError(t, after.Rollback(t.Context(), m.BizID, m.Key))
			pl.rolled = append(pl.rolled, m.ID())
		case 3: // the PREPARE after the COMMIT
			require.NoError(t, after.Prepare(t.Context(), m))
			pl.committed = append(pl.committed, m.ID())
		}
		oldP, newP := partitionOf(m.ID(), partitions), partitionOf(m.ID(), grown)
		if oldP != newP {
			moved++
			if owner(oldP) != owner(newP) {
				crossOwner++
			}
		}
	}
	t.Logf("%d of %d messages moved partition; %d of them to the other center", moved, n, crossOwner)
	require.Positive(t, crossOwner, "no message's envelopes were split across the two centers")

	col.waitFor(t, pl.committed, time.Minute)
	checkRolledBackInStore(t, a, pl.rolled)
	checkForwarded(t, col, pl)
	for _, id := range pl.committed {
		biz, key, _ := envelope.SplitKey(id)
		require.Eventually(t, func() bool {
			m, err := a.Store.Get(t.Context(), biz, key)
			return err == nil && m.Status == state.Committed && m.HasBody
		}, time.Minute, 20*time.Millisecond, "%s not committed with its body", id)
	}
}

// sumCounter adds up every series of a counter in a center's registry.
func sumCounter(t *testing.T, c *center.Center, name string) float64 {
	t.Helper()
	mfs, err := c.Registry().Gather()
	require.NoError(t, err)
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// partitionOf is Kafka's default (murmur2) partition of a control key.
func partitionOf(key string, n int32) int32 {
	p := kgo.StickyKeyPartitioner(nil).ForTopic(controlTopic)
	return int32(p.Partition(&kgo.Record{Key: []byte(key)}, int(n)))
}

// TestReadyzOnPostgres: /readyz answers 200 on PostgreSQL (its store probe
// once used a NUL byte in the key, which PostgreSQL text rejects, so a
// PostgreSQL center never reported ready).
func TestReadyzOnPostgres(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "postgres")
	c := e.startCenter(center.Options{})
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + c.Addr() + "/readyz")
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		t.Logf("/readyz: %d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 200*time.Millisecond)
}
