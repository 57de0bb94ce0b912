package center

import (
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/store"
)

// /readyz means records are being consumed. The broker is stopped and
// started again on the same port and data: while it is down /readyz says
// 503 (it said "ok" until the group noticed, seconds later), and once it
// answers 200 again a PREPARE sent then is stored promptly.
func TestReadyMeansConsumingAcrossABrokerRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const control = "eventcenter.control"
	start := func(port int) *kfake.Cluster {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(filepath.Join(dir, "kafka")),
			kfake.SeedTopics(2, control, control+".dlq"))
		require.NoError(t, err)
		return c
	}
	cluster := start(0)
	addr := cluster.ListenAddrs()[0]
	_, portText, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	t.Cleanup(func() { cluster.Close() }) // the one running at the end, after the center stops

	cfg := testConfig(t, []string{addr})
	log := &logBuffer{}
	c := startTopicsCenter(t, cfg, log)
	eventuallyReadyz(t, c, log, 200, "ok: owns 2 partitions")

	send, stored := prepareSender(t, c, addr)
	send("before")
	require.Eventually(t, func() bool { return stored("before") }, 20*time.Second, 5*time.Millisecond)

	cluster.Close()
	// Not ready while the broker is down, well within the group's
	// session timeout (45s), with the reason.
	body := eventuallyReadyz(t, c, log, 503, "ingest: waiting for a fetch of the control topic to succeed since a broker connection failed")
	require.NotContains(t, body, "127.0.0.1", "the broker is named only to a token holder")
	time.Sleep(300 * time.Millisecond)
	code, _, err := readyz(c)
	require.NoError(t, err)
	require.Equal(t, 503, code, "still down")

	cluster = start(port)
	eventuallyReadyz(t, c, log, 200, "ok: owns 2 partitions")
	ready := time.Now()
	send("after")
	require.Eventually(t, func() bool { return stored("after") }, 20*time.Second, 5*time.Millisecond)
	// Ready means consuming: the record is applied about as fast as
	// before the restart, not after a reconnect.
	require.Less(t, time.Since(ready), 2*time.Second, "a PREPARE sent once ready waited:\n%s", log.String())
	require.False(t, strings.Contains(log.String(), "level=ERROR"), log.String())
}

// prepareSender returns a function producing a PREPARE of key b:<key> to
// the control topic at addr, and one telling whether c stored it.
func prepareSender(t *testing.T, c *Center, addr string) (send func(key string), stored func(key string) bool) {
	t.Helper()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(0), kgo.RecordRetries(1000), kgo.RetryTimeout(time.Minute))
	require.NoError(t, err)
	t.Cleanup(prod.Close)
	send = func(key string) {
		rec, err := envelope.Encode(envelope.Envelope{Type: envelope.Prepare, BizID: "b", MessageKey: key, Payload: []byte("x"), ForwardTopic: "t"})
		require.NoError(t, err)
		kr := &kgo.Record{Topic: "eventcenter.control", Key: rec.Key, Value: rec.Value}
		for _, h := range rec.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		require.NoError(t, prod.ProduceSync(t.Context(), kr).FirstErr())
	}
	stored = func(key string) bool {
		_, err := c.Store.Get(t.Context(), "b", key)
		return !errors.Is(err, store.ErrNotFound)
	}
	return send, stored
}

// A broker that drops every fetch while the group goes on (heartbeats
// answered, the assignment kept) consumes nothing: /readyz says 503 for
// as long as it lasts (it said "ok" throughout), and 200 again once
// fetches succeed, when the records that waited are applied.
func TestNotReadyWhileFetchesFail(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "eventcenter.control", "eventcenter.control.dlq"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	addr := cluster.ListenAddrs()[0]
	log := &logBuffer{}
	c := startTopicsCenter(t, testConfig(t, []string{addr}), log)
	eventuallyReadyz(t, c, log, 200, "ok: owns 2 partitions")
	send, stored := prepareSender(t, c, addr)
	send("before")
	require.Eventually(t, func() bool { return stored("before") }, 20*time.Second, 5*time.Millisecond)

	var failing atomic.Bool
	failing.Store(true)
	cluster.ControlKey(kmsg.Fetch.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if failing.Load() {
			return nil, errors.New("injected fetch failure"), true // closes the connection
		}
		return nil, nil, false
	})
	send("during")
	eventuallyReadyz(t, c, log, 503, "ingest: waiting for a fetch of the control topic to succeed since a broker connection failed")
	for range 20 { // two seconds: it stays not ready
		code, body, err := readyz(c)
		require.NoError(t, err)
		require.Equal(t, 503, code, body)
		time.Sleep(100 * time.Millisecond)
	}
	require.False(t, stored("during"), "nothing was consumed")
	require.True(t, c.Ingester.Joined(), "the group kept the assignment")

	failing.Store(false)
	eventuallyReadyz(t, c, log, 200, "ok: owns 2 partitions")
	require.Eventually(t, func() bool { return stored("during") }, 5*time.Second, 5*time.Millisecond)
}
