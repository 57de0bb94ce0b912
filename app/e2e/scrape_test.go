package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/app/deploycheck"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/testsupport/zktest"
)

func repoRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

var metricNameRE = regexp.MustCompile(`\beventcenter_[a-z0-9_]+[a-z0-9]\b`)

// documentedMetrics returns every metric named in the dashboard, the alert
// rules, the README and the pages under docs/ (not docs/bench/'s raw
// reports). Names of the store's tables and indexes (eventcenter_order_keys,
// ...: every eventcenter_ name the migrations create) are not metrics.
func documentedMetrics(t *testing.T) []string {
	root := repoRoot(t)
	names, err := deploycheck.MetricNames(root)
	require.NoError(t, err)
	schema := map[string]bool{}
	migrations, err := filepath.Glob(filepath.Join(root, "store", "*", "migrations", "*.sql"))
	require.NoError(t, err)
	require.NotEmpty(t, migrations)
	for _, f := range migrations {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, n := range metricNameRE.FindAllString(string(b), -1) {
			schema[n] = true
		}
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	for _, f := range append([]string{filepath.Join(root, "README.md")}, pages...) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, n := range metricNameRE.FindAllString(string(b), -1) {
			if !schema[n] {
				names = append(names, deploycheck.FamilyName(n))
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// TestEveryDocumentedMetricIsExported runs a flow that touches every path
// (commits, rollback, check-back, VERIFY_FAILED, DEAD, dead letters, a
// conflict), scrapes /metrics over HTTP, and finds every metric the documentation,
// the dashboard and the alert rules name.
func TestEveryDocumentedMetricIsExported(t *testing.T) {
	t.Parallel()
	srv := newProducerServer(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	// A registry-addressed check-back too, so the registry series exist.
	zs := zktest.Start(t)
	srvHost := strings.TrimPrefix(srv.URL, "http://")
	const iface = "com.shop.MetricsChecker"
	zktest.Register(t, zs.Addr, fmt.Sprintf("tri://%s/%s?interface=%s&version=1.0.0&methods=verifyMessage&side=provider", srvHost, iface, iface))
	e := newEnv(t, "sqlite", func(c *config.Config) {
		c.Checkback.FirstDelay = 50 * time.Millisecond
		c.Checkback.BackoffBase = 20 * time.Millisecond
		c.Checkback.MaxAttempts = 1
		c.Checkback.Allow = []string{srv.URL, deadURL, "zookeeper://" + zs.Addr, "tri://" + srvHost}
		c.Checkback.Biz = []config.Biz{{BizID: "orders"}}
		c.Forward.Biz = []config.ForwardBiz{{BizID: "orders", Rate: 1e6, MaxInFlight: 1 << 20}} // its throttle series
		c.Ingress.Listen, c.Ingress.Insecure = "127.0.0.1:0", true                              // the producer API's metrics too
	})
	c := e.startCenter(center.Options{})
	col := e.collect(businessTopic)
	raw := e.raw()

	pl := produceMix(t, e, "metrics", 50, 2)
	p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic))
	require.NoError(t, err)
	defer p.Close()
	prepare := func(key, verify, target string) {
		require.NoError(t, p.Prepare(t.Context(), clientlib.Message{BizID: "orders", Key: key, Payload: []byte("x"),
			ForwardTopic: businessTopic, Verify: verify, Target: target}))
	}
	prepare("commit-checked", srv.URL+"/check", "") // check-back answers commit
	prepare("commit-registry", "zookeeper://"+zs.Addr+"/"+iface+"?version=1.0.0", "")
	prepare("parked", deadURL+"/check", "")  // endpoint down: VERIFY_FAILED
	prepare("nowhere", "", "no-such-target") // DEAD: unknown target
	require.NoError(t, p.Commit(t.Context(), "orders", "nowhere"))
	require.NoError(t, p.Rollback(t.Context(), "orders", "metrics-2")) // a conflict: it was committed
	require.NoError(t, raw.ProduceSync(t.Context(), &kgo.Record{Topic: controlTopic, Key: []byte("orders:junk"), Value: []byte("{")}).FirstErr())

	col.waitFor(t, append(pl.committed, envelope.Key("orders", "commit-checked"), envelope.Key("orders", "commit-registry")), time.Minute)
	for key, done := range map[string]func(state.Message) bool{
		"parked":  func(m state.Message) bool { return m.Status == state.VerifyFailed },
		"nowhere": func(m state.Message) bool { return m.SendStatus == state.SendDead },
	} {
		require.Eventually(t, func() bool {
			m, err := c.Store.Get(t.Context(), "orders", key)
			return err == nil && done(m)
		}, 30*time.Second, 20*time.Millisecond, key)
	}

	// A producer API request, so its request counter has a series.
	resp, err := http.Post("http://"+c.IngressAddr()+"/v1/messages/orders/via-http/rollback", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	// An operator action, so the admin metrics have a series too.
	resp, err = http.Post("http://"+c.Addr()+"/api/v1/messages/orders/parked/resolve", "application/json",
		strings.NewReader(`{"decision":"rollback","reason":"producer confirmed the rollback"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// The condition runs on its own goroutine; the last list it saw is
	// read under the lock once Eventually gives up.
	var mu sync.Mutex
	var missing []string
	ok := assert.Eventually(t, func() bool {
		body := scrape(t, "http://"+c.Addr()+"/metrics")
		var now []string
		for _, name := range documentedMetrics(t) {
			if !strings.Contains(body, "\n"+name+"{") && !strings.Contains(body, "\n"+name+" ") &&
				!strings.Contains(body, "\n"+name+"_bucket{") {
				now = append(now, name)
			}
		}
		mu.Lock()
		missing = now
		mu.Unlock()
		return len(now) == 0
	}, 30*time.Second, 200*time.Millisecond)
	if !ok {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("documented but not exported: %v", missing)
	}
}

func scrape(t *testing.T, url string) string {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	if errors.Is(err, context.DeadlineExceeded) {
		return ""
	}
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return "\n" + string(b)
}
