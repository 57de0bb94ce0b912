package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
)

// producerServer is a producer's check-back endpoint: clientlib's handler,
// answering commit for keys starting with "commit" and rollback for keys
// starting with "rollback"; it counts the calls per key.
type producerServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newProducerServer(t *testing.T) *producerServer {
	p := &producerServer{calls: map[string]int{}}
	h := clientlib.NewCheckbackHandler(func(_ context.Context, bizID, key string) (clientlib.Decision, error) {
		p.mu.Lock()
		p.calls[key]++
		p.mu.Unlock()
		switch {
		case strings.HasPrefix(key, "commit"):
			return clientlib.DecisionCommit, nil
		case strings.HasPrefix(key, "rollback"):
			return clientlib.DecisionRollback, nil
		}
		return clientlib.DecisionUnknown, nil
	})
	p.Server = httptest.NewServer(h)
	t.Cleanup(p.Close)
	return p
}

// TestCheckbackSettlesStalePrepares: producers send PREPARE and "die"; the
// center checks back over each protocol against a real HTTP server running
// clientlib's handler. Commit answers are forwarded, rollback answers never.
func TestCheckbackSettlesStalePrepares(t *testing.T) {
	t.Parallel()
	srv := newProducerServer(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	endpoints := map[string]string{
		"http":    srv.URL + "/checkback",
		"triple":  "tri://" + host + "/com.example.OrderService/verifyMessage",
		"jsonrpc": "jsonrpc://" + host + "/com.example.OrderService?method=verifyMessage",
	}
	e := newEnv(t, "sqlite", func(c *config.Config) {
		c.Checkback.FirstDelay = 200 * time.Millisecond
		c.Checkback.BackoffBase = 100 * time.Millisecond
		c.Checkback.Allow = []string{srv.URL, "tri://" + host, "jsonrpc://" + host}
	})
	c := e.startCenter(center.Options{})
	col := e.collect(businessTopic)
	p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic))
	require.NoError(t, err)
	defer p.Close()

	var pl plan
	for proto, endpoint := range endpoints {
		for i := range 10 {
			for _, decision := range []string{"commit", "rollback"} {
				key := fmt.Sprintf("%s-%s-%d", decision, proto, i)
				require.NoError(t, p.Prepare(t.Context(), clientlib.Message{
					BizID: "orders", Key: key, Payload: []byte("payload-" + key), ForwardTopic: businessTopic,
					ForwardKey: "fk-" + key, Headers: []clientlib.Header{{Key: "trace", Value: []byte("t-" + key)}},
					Verify: endpoint,
				}))
				if decision == "commit" {
					pl.committed = append(pl.committed, envelope.Key("orders", key))
				} else {
					pl.rolled = append(pl.rolled, envelope.Key("orders", key))
				}
			}
		}
	}
	col.waitFor(t, pl.committed, time.Minute)
	for _, id := range pl.rolled {
		_, key, _ := envelope.SplitKey(id)
		require.Eventually(t, func() bool {
			m, err := c.Store.Get(t.Context(), "orders", key)
			return err == nil && m.Status == state.RolledBack
		}, 30*time.Second, 20*time.Millisecond, "%s not rolled back by check-back", id)
	}
	checkForwarded(t, col, pl)
	for proto := range endpoints {
		n := testutil.ToFloat64(counter(t, c, "eventcenter_checkback_total", map[string]string{"protocol": proto, "outcome": "commit"}))
		require.GreaterOrEqual(t, n, 10.0, "commit answers over %s", proto)
	}
}

// TestEndpointDownThenLateCommit: the producer's endpoint is down, so the
// check-backs back off and the message parks as VERIFY_FAILED (with the
// alert metric); a late COMMIT envelope still commits and forwards it.
func TestEndpointDownThenLateCommit(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // connection refused from now on
	e := newEnv(t, "sqlite", func(c *config.Config) {
		c.Checkback.FirstDelay = 100 * time.Millisecond
		c.Checkback.BackoffBase = 50 * time.Millisecond
		c.Checkback.BackoffCap = 100 * time.Millisecond
		c.Checkback.MaxAttempts = 3
		c.Checkback.Breaker.Failures = 100
		c.Checkback.Biz = []config.Biz{{BizID: "orders"}}
		c.Checkback.Allow = []string{deadURL}
	})
	c := e.startCenter(center.Options{})
	col := e.collect(businessTopic)
	raw := e.raw()
	produceEnvelope(t, raw, envelope.Envelope{Type: envelope.Prepare, BizID: "orders", MessageKey: "late", Payload: []byte("payload-late"),
		ForwardTopic: businessTopic, ForwardKey: "fk-late", Verify: deadURL + "/check", Headers: []envelope.Header{{Key: "trace", Value: []byte("t-late")}}})

	require.Eventually(t, func() bool {
		m, err := c.Store.Get(t.Context(), "orders", "late")
		return err == nil && m.Status == state.VerifyFailed
	}, 30*time.Second, 20*time.Millisecond)
	m, err := c.Store.Get(t.Context(), "orders", "late")
	require.NoError(t, err)
	require.Equal(t, 3, m.VerifyAttempts, "parked after the configured attempts")
	require.NotEmpty(t, m.LastError)
	require.Equal(t, 1.0, testutil.ToFloat64(counter(t, c, "eventcenter_verify_failed_total", map[string]string{"biz_id": "orders"})))

	produceEnvelope(t, raw, envelope.Envelope{Type: envelope.Commit, BizID: "orders", MessageKey: "late"})
	col.waitFor(t, []string{"orders:late"}, 30*time.Second)
	checkForwarded(t, col, plan{committed: []string{"orders:late"}})
}

// TestDisallowedEndpointIsNeverCalled: an envelope naming an endpoint the
// configuration does not allow is parked with the reason; no request is made.
func TestDisallowedEndpointIsNeverCalled(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("2"))
	}))
	defer victim.Close()
	e := newEnv(t, "sqlite", func(c *config.Config) {
		c.Checkback.FirstDelay = 50 * time.Millisecond
		c.Checkback.Allow = []string{"http://127.0.0.1:1"}
	})
	c := e.startCenter(center.Options{})
	produceEnvelope(t, e.raw(), envelope.Envelope{Type: envelope.Prepare, BizID: "orders", MessageKey: "ssrf", Payload: []byte("x"),
		ForwardTopic: businessTopic, Verify: victim.URL + "/internal/admin"})
	require.Eventually(t, func() bool {
		m, err := c.Store.Get(t.Context(), "orders", "ssrf")
		return err == nil && m.Status == state.VerifyFailed
	}, 30*time.Second, 20*time.Millisecond)
	m, err := c.Store.Get(t.Context(), "orders", "ssrf")
	require.NoError(t, err)
	require.Contains(t, m.LastError, "not allowed")
	require.Zero(t, hits.Load(), "the disallowed endpoint was called")
}
