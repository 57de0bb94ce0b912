package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder/rocketmq"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake/rmqtest"
)

// The RocketMQ client logs through one process-global logger, which the
// first target would take (a logger bound to that test's t, used after the
// test ended). Route it nowhere instead.
func init() { rocketmq.SetClientLogger(slog.New(slog.DiscardHandler)) }

const (
	rmqTarget = "rmq"
	rmqTopic  = "OrdersTopic" // RocketMQ topic names have no dots
)

// startRMQ starts the RocketMQ stand-in (auto-create off) with rmqTopic and
// the extra topics; it is closed at cleanup.
func startRMQ(t *testing.T, topics ...string) *rocketmqfake.Server {
	t.Helper()
	opts := []rocketmqfake.Option{rocketmqfake.WithTopic(rmqTopic, 4)}
	for _, tp := range topics {
		opts = append(opts, rocketmqfake.WithTopic(tp, 2))
	}
	fake, err := rocketmqfake.Start(opts...)
	require.NoError(t, err)
	t.Cleanup(fake.Close)
	return fake
}

// withRMQTarget adds the forward target "rmq" pointing at fake.
func withRMQTarget(fake *rocketmqfake.Server) func(*config.Config) {
	return func(c *config.Config) {
		c.Forward.Targets = append(c.Forward.Targets, config.Target{
			Name: rmqTarget, Type: "rocketmq", NameServers: []string{fake.NameServerAddr()}, Group: "eventcenter-e2e",
		})
	}
}

// rmqCollector reads a RocketMQ topic with the real push consumer and
// remembers every message by its ec-id property.
type rmqCollector struct {
	mu   sync.Mutex
	byID map[string][]*primitive.MessageExt
	all  int
}

func collectRMQ(t *testing.T, fake *rocketmqfake.Server, topic string) *rmqCollector {
	t.Helper()
	ch := rmqtest.Consume(t, fake.NameServerAddr(), topic, rmqtest.InstanceName("e2e-reader"))
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
				c.all++
				c.mu.Unlock()
			case <-ctx.Done():
				return
			}
		}
	}()
	// Registered after Consume's cleanup, so it runs first: the reader
	// stops before the consumer shuts down.
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

func (c *rmqCollector) count() (ids, messages int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID), c.all
}

// waitFor waits until every id was consumed at least once.
func (c *rmqCollector) waitFor(t *testing.T, ids []string, timeout time.Duration) {
	t.Helper()
	var missing []string
	ok := assertEventually(timeout, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		missing = missing[:0]
		for _, id := range ids {
			if len(c.byID[id]) == 0 {
				missing = append(missing, id)
			}
		}
		return len(missing) == 0
	})
	if !ok {
		t.Fatalf("%d of %d messages not consumed from RocketMQ after %s (e.g. %s)", len(missing), len(ids), timeout, missing[0])
	}
}

// assertEventually polls cond every 20 ms until it holds or timeout passes.
func assertEventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond) // polling a consumer's progress, not waiting for an event we could signal
	}
}

// storedCopies returns the messages the stand-in stored for id on topic.
func storedCopies(fake *rocketmqfake.Server, topic, id string) []rocketmqfake.Message {
	var out []rocketmqfake.Message
	for _, m := range fake.Messages(topic) {
		if m.Properties[envelope.HeaderID] == id {
			out = append(out, m)
		}
	}
	return out
}

// rmqMessage is the message the tests send for key: a tag, a forward key,
// two headers, and a body of size bytes (at least the "payload-key" text).
func rmqMessage(key string, size int) clientlib.Message {
	return clientlib.Message{
		BizID: "orders", Key: key, Payload: rmqPayload(key, size),
		ForwardTopic: rmqTopic, ForwardKey: "fk-" + key, Target: rmqTarget, Tag: "TagA",
		Headers: []clientlib.Header{{Key: "trace", Value: []byte("t-" + key)}, {Key: "source", Value: []byte("e2e")}},
	}
}

func rmqPayload(key string, size int) []byte {
	p := "payload-" + key
	if len(p) < size {
		p += strings.Repeat(" and more", (size-len(p))/9+1)
	}
	return []byte(p)
}

// checkRMQMessage asserts that m is what rmqMessage(key, size) becomes.
func checkRMQMessage(t *testing.T, m *primitive.MessageExt, key string, size int) {
	t.Helper()
	id := msgID("orders", key)
	require.Equal(t, string(rmqPayload(key, size)), string(m.Body), id)
	require.Equal(t, "TagA", m.GetTags(), id)
	require.ElementsMatch(t, []string{"fk-" + key, id}, strings.Fields(m.GetKeys()), id)
	require.Equal(t, "t-"+key, m.GetProperty("trace"), id)
	require.Equal(t, "e2e", m.GetProperty("source"), id)
	require.Equal(t, id, m.GetProperty(envelope.HeaderID), id)
	require.Equal(t, rmqTopic, m.Topic, id)
}

// rmqProducer is a clientlib producer on the env's Kafka.
func rmqProducer(t *testing.T, e *env) *clientlib.Producer {
	t.Helper()
	p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic))
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// sendCommitted sends msg with Transact and a local transaction that
// succeeds.
func sendCommitted(t *testing.T, p *clientlib.Producer, msg clientlib.Message) {
	t.Helper()
	require.NoError(t, p.Transact(t.Context(), msg, func(context.Context) error { return nil }))
}

// sendRolledBack sends msg with Transact and a local transaction that fails.
func sendRolledBack(t *testing.T, p *clientlib.Producer, msg clientlib.Message) {
	t.Helper()
	err := p.Transact(t.Context(), msg, func(context.Context) error { return errLocalTx })
	require.ErrorIs(t, err, errLocalTx)
}

// waitRow waits until the message's row satisfies ok and returns it.
func waitRow(t *testing.T, c *center.Center, key string, timeout time.Duration, ok func(state.Message) bool) state.Message {
	t.Helper()
	var last state.Message
	var lastErr error
	if !assertEventually(timeout, func() bool {
		last, lastErr = c.Store.Get(t.Context(), "orders", key)
		return lastErr == nil && ok(last)
	}) {
		t.Fatalf("message orders:%s not in the expected state after %s: %+v (err %v)", key, timeout, last, lastErr)
	}
	return last
}

func isDead(m state.Message) bool       { return m.SendStatus == state.SendDead }
func isRolledBack(m state.Message) bool { return m.Status == state.RolledBack }

// TestRocketMQFlow: committed messages go control topic → center →
// RocketMQ stand-in and are read back by the real push consumer with body
// (compressed on the wire when ≥ 4 KiB), tag, keys and properties;
// rolled-back ones never arrive; commit-before-prepare works too.
func TestRocketMQFlow(t *testing.T) {
	t.Parallel()
	testRocketMQFlow(t, "sqlite")
}

// TestRocketMQFlowPostgres is TestRocketMQFlow with the PostgreSQL store.
func TestRocketMQFlowPostgres(t *testing.T) {
	t.Parallel()
	testRocketMQFlow(t, "postgres")
}

func testRocketMQFlow(t *testing.T, driver string) {
	fake := startRMQ(t)
	e := newEnv(t, driver, withRMQTarget(fake))
	c := e.startCenter(center.Options{})
	col := collectRMQ(t, fake, rmqTopic)
	p := rmqProducer(t, e)

	const n = 60
	sizes := map[string]int{}
	var committed, rolled []string
	for i := range n {
		key := fmt.Sprintf("flow-%d", i)
		size := 0
		if i%4 == 2 {
			size = 8 << 10 // compressed by the client (over 4 KiB)
		}
		sizes[key] = size
		msg := rmqMessage(key, size)
		switch i % 10 {
		case 0:
			sendRolledBack(t, p, msg)
			rolled = append(rolled, key)
			continue
		case 1:
			raw := e.raw()
			produceEnvelope(t, raw, envelope.Envelope{Type: envelope.Commit, BizID: msg.BizID, MessageKey: key})
			produceEnvelope(t, raw, envelope.Envelope{
				Type: envelope.Prepare, BizID: msg.BizID, MessageKey: key, Payload: msg.Payload,
				ForwardTopic: msg.ForwardTopic, ForwardKey: msg.ForwardKey, Target: msg.Target, Tag: msg.Tag, Headers: msg.Headers,
			})
		default:
			sendCommitted(t, p, msg)
		}
		committed = append(committed, key)
	}
	ids := make([]string, len(committed))
	for i, k := range committed {
		ids[i] = msgID("orders", k)
	}
	col.waitFor(t, ids, 30*time.Second)
	for _, key := range committed {
		msgs := col.get(msgID("orders", key))
		for _, m := range msgs {
			checkRMQMessage(t, m, key, sizes[key])
		}
		row := waitRow(t, c, key, 10*time.Second, func(m state.Message) bool { return m.SendStatus == state.SendSent })
		require.NotEmpty(t, row.SendRef, "the RocketMQ message id is kept")
	}
	// The big bodies travelled compressed.
	compressed := 0
	for _, m := range fake.Messages(rmqTopic) {
		if m.Compressed {
			compressed++
			require.GreaterOrEqual(t, len(m.Body), 8<<10)
		}
	}
	require.Positive(t, compressed, "bodies over 4 KiB are sent compressed")
	// Rolled-back messages are decided and never sent.
	for _, key := range rolled {
		waitRow(t, c, key, 10*time.Second, isRolledBack)
		require.Empty(t, col.get(msgID("orders", key)), "rolled-back %s was forwarded", key)
		require.Empty(t, storedCopies(fake, rmqTopic, msgID("orders", key)), "rolled-back %s reached the broker", key)
	}
	gotIDs, msgs := col.count()
	require.Equal(t, len(committed), gotIDs, "consumed ids that were never committed")
	t.Logf("%d committed, %d rolled back, %d RocketMQ messages consumed, %d compressed", len(committed), len(rolled), msgs, compressed)
}

// TestRocketMQTransientErrors injects SERVICE_NOT_AVAILABLE (nothing
// stored), FLUSH_DISK_TIMEOUT and SLAVE_NOT_AVAILABLE (stored, but not
// SEND_OK) answers: every message is delivered; 10 and 11 leave duplicates,
// which carry the same ec-id and body.
func TestRocketMQTransientErrors(t *testing.T) {
	t.Parallel()
	fake := startRMQ(t)
	answers := map[string]int{} // ec-id → answers so far (hook calls are serialized)
	fake.SetSendHook(func(_ string, m rocketmqfake.Message) (int, string, time.Duration) {
		id := m.Properties[envelope.HeaderID]
		answers[id]++
		n := answers[id]
		_, key, _ := envelope.SplitKey(id)
		switch {
		case strings.HasPrefix(key, "svc-") && n <= 4: // more than the client's own 3 attempts
			return 14, "injected: service not available", 0
		case strings.HasPrefix(key, "disk-") && n == 1:
			return 10, "injected: flush disk timeout", 0
		case strings.HasPrefix(key, "slave-") && n == 1:
			return 11, "injected: slave not available", 0
		}
		return 0, "", 0
	})
	e := newEnv(t, "sqlite", withRMQTarget(fake))
	c := e.startCenter(center.Options{})
	col := collectRMQ(t, fake, rmqTopic)
	p := rmqProducer(t, e)

	var keys, ids []string
	for _, prefix := range []string{"svc", "disk", "slave", "ok"} {
		for i := range 3 {
			key := fmt.Sprintf("%s-%d", prefix, i)
			sendCommitted(t, p, rmqMessage(key, 0))
			keys = append(keys, key)
			ids = append(ids, msgID("orders", key))
		}
	}
	col.waitFor(t, ids, 30*time.Second)
	for _, key := range keys {
		id := msgID("orders", key)
		waitRow(t, c, key, 10*time.Second, func(m state.Message) bool { return m.SendStatus == state.SendSent })
		copies := storedCopies(fake, rmqTopic, id)
		switch {
		case strings.HasPrefix(key, "svc-"):
			require.Len(t, copies, 1, "%s: SERVICE_NOT_AVAILABLE stores nothing, so one copy", id)
		case strings.HasPrefix(key, "disk-"), strings.HasPrefix(key, "slave-"):
			require.GreaterOrEqual(t, len(copies), 2, "%s: the broker kept the copy it answered 10/11 for, and the retry stored another", id)
			// Consumers see the duplicates too, all with one ec-id.
			require.Eventually(t, func() bool { return len(col.get(id)) >= 2 }, 15*time.Second, 20*time.Millisecond, "%s: duplicates consumed", id)
		default:
			require.Len(t, copies, 1, id)
		}
		for _, m := range col.get(id) {
			checkRMQMessage(t, m, key, 0)
		}
		for _, cp := range copies {
			require.Equal(t, id, cp.Properties[envelope.HeaderID])
		}
	}
	require.GreaterOrEqual(t, answers[msgID("orders", "svc-0")], 5, "14 was answered four times, then the message was sent")
}

// TestRocketMQBrokerOutage stops the stand-in (listeners and connections
// closed) while messages are committed, then restarts it: everything
// committed meanwhile reaches the broker and is consumed, rolled-back
// messages never.
//
// The messages are read by a consumer started after the restart: a push
// consumer that lives through the outage usually recovers within 3 s, but
// occasionally (twice in about a hundred runs) one of its queues stalled
// for over 30 s: the client (v2.1.2) does not fail a request whose
// connection died and waits for the pull's 30 s timeout. That is the
// client's behaviour, not the center's.
func TestRocketMQBrokerOutage(t *testing.T) {
	t.Parallel()
	fake := startRMQ(t)
	e := newEnv(t, "sqlite", withRMQTarget(fake))
	c := e.startCenter(center.Options{})
	p := rmqProducer(t, e)

	var ids []string
	send := func(prefix string, n int) {
		for i := range n {
			key := fmt.Sprintf("%s-%d", prefix, i)
			if i%5 == 4 {
				sendRolledBack(t, p, rmqMessage(key, 0))
				continue
			}
			sendCommitted(t, p, rmqMessage(key, 0))
			ids = append(ids, msgID("orders", key))
		}
	}
	allStored := func() bool {
		for _, id := range ids {
			if len(storedCopies(fake, rmqTopic, id)) == 0 {
				return false
			}
		}
		return true
	}
	send("before", 10)
	require.True(t, assertEventually(30*time.Second, allStored), "the messages before the outage were not sent")

	fake.Stop()
	send("during", 20)
	// The center has tried and failed while the broker was down.
	row := waitRow(t, c, "during-0", 15*time.Second, func(m state.Message) bool { return m.SendAttempts > 0 })
	require.Equal(t, state.SendPending, row.SendStatus, "a broker outage does not make messages DEAD")
	require.NotEmpty(t, row.LastError)
	t.Logf("while the broker was down: %d attempts, last error %q", row.SendAttempts, row.LastError)
	require.NoError(t, fake.Restart())
	send("after", 10)

	start := time.Now()
	require.True(t, assertEventually(30*time.Second, allStored), "messages committed during the outage were not sent after the restart")
	t.Logf("everything stored by the broker %s after the restart (up to the forwarder breaker's cool-down, if it opened)", time.Since(start).Round(time.Millisecond))
	col := collectRMQ(t, fake, rmqTopic)
	col.waitFor(t, ids, 30*time.Second)
	for _, id := range ids {
		checkRMQMessage(t, col.get(id)[0], rmqKeyOf(id), 0)
	}
	for _, key := range []string{"before-4", "during-4", "during-9", "after-4"} {
		waitRow(t, c, key, 10*time.Second, isRolledBack)
		require.Empty(t, col.get(msgID("orders", key)), "rolled-back %s was forwarded", key)
	}
	gotIDs, _ := col.count()
	require.Equal(t, len(ids), gotIDs)
}

func rmqKeyOf(id string) string {
	_, key, _ := envelope.SplitKey(id)
	return key
}

// TestRocketMQPersistentFailureGoesDead: a topic whose sends always fail
// with SERVICE_NOT_AVAILABLE ends DEAD after forward.max_attempts with the
// broker's reason kept; another topic keeps flowing.
func TestRocketMQPersistentFailureGoesDead(t *testing.T) {
	t.Parallel()
	const doomed = "DoomedTopic"
	fake := startRMQ(t, doomed)
	fake.SetSendHook(func(topic string, _ rocketmqfake.Message) (int, string, time.Duration) {
		if topic == doomed {
			return 14, "injected outage of " + doomed, 0
		}
		return 0, "", 0
	})
	e := newEnv(t, "sqlite", withRMQTarget(fake), func(c *config.Config) { c.Forward.MaxAttempts = 3 })
	c := e.startCenter(center.Options{})
	col := collectRMQ(t, fake, rmqTopic)
	p := rmqProducer(t, e)

	bad := rmqMessage("doomed-1", 0)
	bad.ForwardTopic = doomed
	sendCommitted(t, p, bad)
	var ids []string
	for i := range 5 {
		key := fmt.Sprintf("fine-%d", i)
		sendCommitted(t, p, rmqMessage(key, 0))
		ids = append(ids, msgID("orders", key))
	}
	col.waitFor(t, ids, 30*time.Second)

	row := waitRow(t, c, "doomed-1", 30*time.Second, isDead)
	require.Equal(t, 3, row.SendAttempts, "DEAD after forward.max_attempts")
	require.Contains(t, row.LastError, "CODE: 14", "the broker's answer is kept")
	require.Contains(t, row.LastError, "injected outage of "+doomed)
	require.Contains(t, row.LastError, doomed)
	require.Empty(t, fake.Messages(doomed))

	// Messages after the DEAD one still flow.
	sendCommitted(t, p, rmqMessage("fine-after", 0))
	col.waitFor(t, []string{msgID("orders", "fine-after")}, 30*time.Second)
}

// TestRocketMQUnknownTargetAndTopic: a message naming a target that is not
// configured, and one for a RocketMQ topic that does not exist (no
// auto-creation), go DEAD at once with a clear reason; the others keep
// flowing.
func TestRocketMQUnknownTargetAndTopic(t *testing.T) {
	t.Parallel()
	fake := startRMQ(t)
	e := newEnv(t, "sqlite", withRMQTarget(fake))
	c := e.startCenter(center.Options{})
	col := collectRMQ(t, fake, rmqTopic)
	p := rmqProducer(t, e)

	sendCommitted(t, p, rmqMessage("first", 0))
	noTarget := rmqMessage("no-target", 0)
	noTarget.Target = "nope"
	sendCommitted(t, p, noTarget)
	noTopic := rmqMessage("no-topic", 0)
	noTopic.ForwardTopic = "MissingTopic"
	sendCommitted(t, p, noTopic)
	sendCommitted(t, p, rmqMessage("last", 0))
	col.waitFor(t, []string{msgID("orders", "first"), msgID("orders", "last")}, 30*time.Second)

	row := waitRow(t, c, "no-target", 15*time.Second, isDead)
	require.Contains(t, row.LastError, `forward target "nope" is not configured`)
	require.Equal(t, 1, row.SendAttempts, "an unknown target is not retried")

	row = waitRow(t, c, "no-topic", 15*time.Second, isDead)
	require.Regexp(t, regexp.MustCompile(`rocketmq topic "MissingTopic" does not exist`), row.LastError)
	require.Equal(t, 1, row.SendAttempts, "an unknown topic is not retried")
	require.Empty(t, fake.Messages("MissingTopic"))

	sendCommitted(t, p, rmqMessage("after-dead", 0))
	col.waitFor(t, []string{msgID("orders", "after-dead")}, 30*time.Second)
	gotIDs, _ := col.count()
	require.Equal(t, 3, gotIDs)
}

// TestDevRocketMQ runs `eventcenter dev --rocketmq` as a process, sends a
// transactional message for the "rocketmq" target over Kafka and reads it
// back from the stand-in with the real push consumer.
func TestDevRocketMQ(t *testing.T) {
	t.Parallel()
	broker := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	dev := startBinary(t, "dev", "--rocketmq", "--kafka-addr", broker, "--data-dir", t.TempDir(), "--http-listen", "127.0.0.1:0", "--ingress-listen", "127.0.0.1:0")
	nsPattern := regexp.MustCompile(`RocketMQ:\s+name server (\S+)`)
	var nameServer string
	require.Eventually(t, func() bool {
		out := dev.output.String()
		if !strings.Contains(out, "eventcenter dev is running") {
			return false
		}
		m := nsPattern.FindStringSubmatch(out)
		if m != nil {
			nameServer = m[1]
		}
		return true
	}, time.Minute, 20*time.Millisecond, "dev did not start:\n%s", dev.output.String())
	require.NotEmpty(t, nameServer, "dev --rocketmq prints the name server:\n%s", dev.output.String())

	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	require.NoError(t, err)
	defer cl.Close()
	for _, env := range []envelope.Envelope{
		{
			Type: envelope.Prepare, BizID: "orders", MessageKey: "dev-1", Payload: []byte("hello rocketmq"),
			ForwardTopic: "DevTopic", ForwardKey: "order-1", Target: "rocketmq", Tag: "Created",
			Headers: []envelope.Header{{Key: "source", Value: []byte("dev")}},
		},
		{Type: envelope.Commit, BizID: "orders", MessageKey: "dev-1"},
	} {
		rec, err := envelope.Encode(env)
		require.NoError(t, err)
		kr := &kgo.Record{Topic: "eventcenter.control", Key: rec.Key, Value: rec.Value}
		for _, h := range rec.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		require.NoError(t, cl.ProduceSync(t.Context(), kr).FirstErr())
	}

	ch := rmqtest.Consume(t, nameServer, "DevTopic", rmqtest.InstanceName("e2e-dev"))
	select {
	case m := <-ch:
		require.Equal(t, "hello rocketmq", string(m.Body))
		require.Equal(t, "Created", m.GetTags())
		require.Equal(t, "dev", m.GetProperty("source"))
		require.Equal(t, "orders:dev-1", m.GetProperty(envelope.HeaderID))
		require.ElementsMatch(t, []string{"order-1", "orders:dev-1"}, strings.Fields(m.GetKeys()))
	case <-time.After(30 * time.Second):
		t.Fatalf("nothing consumed from the dev stand-in; center said:\n%s", dev.output.String())
	}
	dev.interrupt(t)
}
