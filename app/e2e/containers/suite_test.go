package containers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
)

// waitRow waits until the row of orders:key satisfies ok and returns it.
func waitRow(t *testing.T, c *center.Center, key string, timeout time.Duration, ok func(state.Message) bool) state.Message {
	t.Helper()
	var last state.Message
	var lastErr error
	if !eventually(timeout, func() bool {
		last, lastErr = c.Store.Get(t.Context(), "orders", key)
		return lastErr == nil && ok(last)
	}) {
		t.Fatalf("orders:%s not in the expected state after %s: %+v (err %v)", key, timeout, last, lastErr)
	}
	return last
}

func isRolledBack(m state.Message) bool { return m.Status == state.RolledBack }
func isSent(m state.Message) bool       { return m.SendStatus == state.SendSent }
func isDead(m state.Message) bool       { return m.SendStatus == state.SendDead }

// TestFlowKafkaPostgres: real Kafka (KRaft) and real PostgreSQL. Committed
// messages (Transact and commit-before-prepare) reach the Kafka business
// topic with payload, key and headers; rolled-back ones never do.
func TestFlowKafkaPostgres(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "postgres")
	c := w.startCenter()
	col := w.collect(w.topic)
	pl := w.produceMix(500, func(i int) clientlib.Message {
		key := fmt.Sprintf("m-%d", i)
		return clientlib.Message{
			BizID: "orders", Key: key, Payload: payload(key, 0), ForwardTopic: w.topic, ForwardKey: "fk-" + key,
			Headers: []clientlib.Header{{Key: "trace", Value: []byte("t-" + key)}},
		}
	})
	col.waitFor(t, pl.committed, 2*time.Minute)
	for _, id := range pl.committed {
		key := keyOf(id)
		for _, r := range col.get(id) {
			require.Equal(t, string(payload(key, 0)), r.Value, id)
			require.Equal(t, "fk-"+key, r.Key, id)
			require.Equal(t, "t-"+key, r.Headers["trace"], id)
		}
	}
	for _, id := range pl.rolled {
		waitRow(t, c, keyOf(id), 30*time.Second, isRolledBack)
		require.Empty(t, col.get(id), "rolled-back %s was forwarded", id)
	}
	require.Equal(t, len(pl.committed), col.ids(), "forwarded ids that were never committed")
}

// TestCheckbackHTTPKafkaPostgres: producers send PREPARE only; the center
// checks back over HTTP with a real server running clientlib's handler.
// Commit answers are forwarded to real Kafka, rollback answers never.
func TestCheckbackHTTPKafkaPostgres(t *testing.T) {
	t.Parallel()
	srv := newProducerServer(t)
	w := newWorld(t, "postgres", func(c *config.Config) {
		c.Checkback.FirstDelay = 300 * time.Millisecond
		c.Checkback.BackoffBase = 200 * time.Millisecond
		c.Checkback.Allow = []string{srv.URL}
	})
	c := w.startCenter()
	col := w.collect(w.topic)
	p := w.producer()
	var committed, rolled []string
	for i := range 20 {
		for _, decision := range []string{"commit", "rollback"} {
			key := fmt.Sprintf("%s-%d", decision, i)
			require.NoError(t, p.Prepare(t.Context(), clientlib.Message{
				BizID: "orders", Key: key, Payload: payload(key, 0), ForwardTopic: w.topic, ForwardKey: "fk-" + key,
				Verify: srv.URL + "/checkback",
			}))
			if decision == "commit" {
				committed = append(committed, "orders:"+key)
			} else {
				rolled = append(rolled, key)
			}
		}
	}
	col.waitFor(t, committed, time.Minute)
	for _, key := range rolled {
		waitRow(t, c, key, 30*time.Second, isRolledBack)
		require.Empty(t, col.get("orders:"+key), "rolled-back %s was forwarded", key)
	}
	require.GreaterOrEqual(t, srv.total(), 40, "every PREPARE was checked back")
}

// TestRocketMQTargetKafkaPostgres: messages for a RocketMQ target go
// through real Kafka and PostgreSQL to a real RocketMQ broker and are read
// back with the real push consumer (body, compressed ones included, tag,
// keys, properties). Rolled-back messages never arrive; a message for a
// topic the broker does not have, or for an unknown target, goes DEAD with
// the reason while the others keep flowing.
func TestRocketMQTargetKafkaPostgres(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	rmq, err := rmqShared.get(startRocketMQ)
	require.NoError(t, err)
	topic := fmt.Sprintf("Orders_tc_%d", time.Now().UnixNano())
	rmq.createTopic(t, topic)

	w := newWorld(t, "postgres", func(c *config.Config) {
		c.Forward.Targets = append(c.Forward.Targets, config.Target{Name: "rmq", Type: "rocketmq", NameServers: []string{rmq.nameServer}})
	})
	c := w.startCenter()
	col := collectRMQ(t, rmq.nameServer, topic)
	size := func(i int) int {
		if i%4 == 2 {
			return 8 << 10 // compressed by the client
		}
		return 0
	}
	pl := w.produceMix(100, func(i int) clientlib.Message {
		key := fmt.Sprintf("r-%d", i)
		return clientlib.Message{
			BizID: "orders", Key: key, Payload: payload(key, size(i)), ForwardTopic: topic, ForwardKey: "fk-" + key,
			Target: "rmq", Tag: "TagA", Headers: []clientlib.Header{{Key: "trace", Value: []byte("t-" + key)}},
		}
	})
	p := w.producer()
	noTopic := clientlib.Message{BizID: "orders", Key: "no-topic", Payload: []byte("x"), ForwardTopic: "MissingTopic_tc", Target: "rmq"}
	noTarget := clientlib.Message{BizID: "orders", Key: "no-target", Payload: []byte("x"), ForwardTopic: topic, Target: "nope"}
	for _, m := range []clientlib.Message{noTopic, noTarget} {
		require.NoError(t, p.Transact(t.Context(), m, func(context.Context) error { return nil }))
	}

	col.waitFor(t, pl.committed, 2*time.Minute)
	for i, id := range pl.committed {
		key := keyOf(id)
		var n int
		_, err := fmt.Sscanf(key, "r-%d", &n)
		require.NoError(t, err)
		for _, m := range col.get(id) {
			require.Equal(t, string(payload(key, size(n))), string(m.Body), id)
			require.Equal(t, "TagA", m.GetTags(), id)
			require.ElementsMatch(t, []string{"fk-" + key, id}, strings.Fields(m.GetKeys()), id)
			require.Equal(t, "t-"+key, m.GetProperty("trace"), id)
			require.Equal(t, id, m.GetProperty(envelope.HeaderID), id)
		}
		if i < 10 {
			row := waitRow(t, c, key, 30*time.Second, isSent)
			require.NotEmpty(t, row.SendRef)
		}
	}
	for _, id := range pl.rolled {
		waitRow(t, c, keyOf(id), 30*time.Second, isRolledBack)
		require.Empty(t, col.get(id), "rolled-back %s was forwarded", id)
	}
	row := waitRow(t, c, "no-topic", time.Minute, isDead)
	require.Contains(t, row.LastError, `"MissingTopic_tc" does not exist`)
	row = waitRow(t, c, "no-target", time.Minute, isDead)
	require.Contains(t, row.LastError, `forward target "nope" is not configured`)
	require.Equal(t, len(pl.committed), col.ids(), "consumed ids that were never committed")
}
