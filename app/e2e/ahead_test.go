package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib"
)

// TestWrittenAheadSurvivesKill9 kills the center binary (SIGKILL) after it
// committed an ordered message written ahead and while its send hangs:
// the row says SENT and nothing confirmed it. A second center takes the
// partitions over, reads the control records again, writes the message
// back to pending and sends it; the key's later messages, one of them
// committed while no center ran, come after it. Nothing is lost, and the
// key's first deliveries follow its commit order.
//
// Not parallel: it runs before the package's parallel tests, so that its
// two centers' migrations and its minute-long hung send add nothing to
// the load the timing bounds of the scheduled-delivery tests meet.
func TestWrittenAheadSurvivesKill9(t *testing.T) {
	e := newEnv(t, "postgres", func(c *config.Config) {
		c.Kafka.SessionTimeout = 6 * time.Second
		// The hung send outlives the kill: a minute, within the lease.
		c.Forward.Lease, c.Ingest.SendLease = 2*time.Minute, 2*time.Minute
		c.Forward.InlineTimeout = time.Minute
	})
	writeCfg := func() (path, addr string) {
		cfg := e.cfg
		cfg.HTTP.Listen = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		return writeConfig(t, cfg), cfg.HTTP.Listen
	}
	got := readOrder(t, e)
	pool, err := pgxpool.New(t.Context(), e.cfg.Store.DSN)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	// Every produce to the business topic hangs until released, then
	// fails (its client is dead by then); the rest pass.
	var held atomic.Int32
	var released atomic.Bool
	release := make(chan struct{})
	bizTopicID := e.cluster.TopicInfo(businessTopic).TopicID // produce v13 names topics by id
	e.cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		pr, ok := req.(*kmsg.ProduceRequest)
		if !ok || released.Load() || len(pr.Topics) == 0 ||
			(pr.Topics[0].Topic != businessTopic && pr.Topics[0].TopicID != bizTopicID) {
			return nil, nil, false
		}
		e.cluster.KeepControl()
		held.Add(1)
		e.cluster.SleepControl(func() { <-release })
		return nil, errors.New("held produce dropped"), true
	})

	cfgA, addrA := writeCfg()
	a := startBinary(t, "serve", "--config", cfgA)
	require.Eventually(t, func() bool { return strings.Contains(get(addrA, "/readyz"), "ordered messages written ahead: on") },
		time.Minute, 50*time.Millisecond, "writing ahead never switched on:\n%s", a.output.String())

	p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic))
	require.NoError(t, err)
	t.Cleanup(p.Close)
	var want []string
	send := func(i int) {
		msg := clientlib.Message{BizID: "orders", Key: fmt.Sprintf("cart-ev-%d", i), Payload: []byte("x"),
			ForwardTopic: businessTopic, OrderKey: "cart"}
		require.NoError(t, p.Transact(t.Context(), msg, func(context.Context) error { return nil }))
		want = append(want, msg.ID())
	}
	send(0)
	send(1)
	unconfirmed := func() int {
		var n int
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM eventcenter_messages m
			WHERE sent_ahead_offset > coalesce((SELECT sent_offset FROM eventcenter_sent_watermarks w
				WHERE w.partition = m.partition), -1) AND send_status = 1`).Scan(&n))
		return n
	}
	if !assert.Eventually(t, func() bool { return held.Load() > 0 && unconfirmed() > 0 }, time.Minute, 20*time.Millisecond) {
		rows, _ := pool.Query(t.Context(), `SELECT message_key, status, send_status, sent_ahead_offset, order_seq, last_error FROM eventcenter_messages`)
		for rows.Next() {
			vals, _ := rows.Values()
			t.Log(vals...)
		}
		t.Fatalf("the first message was never written ahead with its send hanging (held %d):\n%s", held.Load(), a.output.String())
	}
	a.kill(t)
	send(2) // committed while no center runs
	released.Store(true)
	close(release)
	require.Empty(t, got.firsts("cart"), "nothing reached the topic before the takeover")

	cfgB, addrB := writeCfg()
	b := startBinary(t, "serve", "--config", cfgB)
	require.Eventually(t, func() bool { return len(got.firsts("cart")) == len(want) }, 2*time.Minute, 20*time.Millisecond,
		"every message of the key delivered:\n%s", b.output.String())
	require.Equal(t, want, got.firsts("cart"), "first deliveries in commit order")
	require.Zero(t, unconfirmed())
	metrics := get(addrB, "/metrics")
	require.Contains(t, metrics, `eventcenter_forward_order_ahead_total{result="written_back"}`)
	require.NotContains(t, metrics, `eventcenter_forward_order_ahead_total{result="written_back"} 0`,
		"the second center wrote the unconfirmed message back")
	b.interrupt(t)
}

// get returns the body of an HTTP GET on addr ("" on an error).
func get(addr, path string) string {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}
