package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/envelope/checkback"
)

const (
	controlTopic  = "eventcenter.control"
	businessTopic = "orders.events"
	secret        = "checkback-secret-0123456789"
)

// needTool finds a program: missing, the test is skipped, except in CI
// (CI=true), where it fails.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("%s not found: %v", name, err)
	}
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// world is a center on the embedded broker with the producer API on, a
// producer token and a check-back secret per language (bizID = language).
type world struct {
	cluster *kfake.Cluster
	center  *center.Center
	ports   map[string][2]int // bizID -> good and bad check-back ports
}

func newWorld(t *testing.T, bizIDs ...string) *world {
	t.Helper()
	return newWorldWith(t, nil, bizIDs...)
}

// newWorldWith is newWorld with mod applied to the configuration last.
func newWorldWith(t *testing.T, mod func(*config.Config), bizIDs ...string) *world {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, controlTopic, controlTopic+".dlq", businessTopic))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	w := &world{cluster: cluster, ports: map[string][2]int{}}
	cfg := config.Default()
	cfg.Kafka.Brokers = cluster.ListenAddrs()
	cfg.Store = config.Store{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "ec.db"), MaxConns: 1, AutoMigrate: true}
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.Admin.Insecure = true
	cfg.Forward.ScanInterval = 100 * time.Millisecond
	cfg.Checkback.FirstDelay = 100 * time.Millisecond
	cfg.Checkback.BackoffBase = 200 * time.Millisecond
	cfg.Checkback.BackoffCap = time.Second
	cfg.Log.Level = "warn"
	cfg.Ingress.Listen = "127.0.0.1:0"
	for _, b := range bizIDs {
		good, bad := freePort(t), freePort(t)
		w.ports[b] = [2]int{good, bad}
		cfg.Ingress.Tokens = append(cfg.Ingress.Tokens, config.IngressToken{Name: b, BizIDs: []string{b}, Token: b + "-producer-token-0123456789"})
		cfg.Checkback.Biz = append(cfg.Checkback.Biz, config.Biz{BizID: b, Secret: secret,
			Allow: []string{fmt.Sprintf("http://127.0.0.1:%d", good), fmt.Sprintf("http://127.0.0.1:%d", bad)}})
	}
	if mod != nil {
		mod(&cfg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	il, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	logs := io.Discard
	if testing.Verbose() {
		logs = os.Stderr
	}
	c, err := center.New(t.Context(), cfg, center.Options{
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})), Listener: l, IngressListener: il,
		KafkaOptions: []kgo.Opt{kgo.FetchMaxWait(100 * time.Millisecond)},
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	})
	w.center = c
	return w
}

// driverResult is what a language's e2e driver prints.
type driverResult struct {
	VectorOK      bool              `json:"vector_ok"`
	VectorRefused map[string]string `json:"vector_refused"`
	CommitResult  string            `json:"commit_result"`
	RollbackError string            `json:"rollback_error"`
	Invalid       struct {
		Status  int    `json:"status"`
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"invalid"`
	Unauthorized int      `json:"unauthorized"`
	Batch        []string `json:"batch"`
	States       map[string]struct {
		Status         string  `json:"status"`
		SendStatus     *string `json:"send_status"`
		VerifyAttempts int     `json:"verify_attempts"`
	} `json:"states"`
	Calls map[string]int `json:"calls"`
	// SettledRule is settled() of each of settledCases, in order.
	SettledRule []bool `json:"settled_rule"`
	// Settled is what wait_settled / waitSettled returned, by key suffix.
	Settled map[string]struct {
		Status     string `json:"status"`
		SendStatus string `json:"send_status"`
		Orphan     bool   `json:"orphan"`
		Note       string `json:"note"`
	} `json:"settled"`
}

// settledCases are states from GET /v1/messages/..., and whether a
// producer waiting on the message is done: forwarded, given up, rolled
// back, cancelled, parked after its check-backs, or an orphan COMMIT.
var settledCases = []struct {
	state   string
	settled bool
}{
	{`{"status":null}`, false},
	{`{"status":"PREPARED"}`, false},
	{`{"status":"COMMITTED","send_status":"PENDING"}`, false},
	{`{"status":"COMMITTED","send_status":"SENT"}`, true},
	{`{"status":"COMMITTED","send_status":"DEAD"}`, true},
	{`{"status":"COMMITTED","send_status":"PENDING","orphan":true}`, true},
	{`{"status":"ROLLED_BACK"}`, true},
	{`{"status":"CANCELLED"}`, true},
	{`{"status":"VERIFY_FAILED"}`, true},
}

// runDriver runs a language's driver for bizID and checks what it saw.
func (w *world) runDriver(t *testing.T, bizID string, argv ...string) {
	t.Helper()
	// A signature made by the center's own signing code, for the driver
	// to verify (and to refuse when tampered with).
	now := time.Now()
	signed := checkback.Signed{Method: "GET", Host: "127.0.0.1:8090", Target: "/checkback?bizID=" + bizID + "&messageKey=k&attempt=1"}
	vector, err := json.Marshal(map[string]any{"header": checkback.Sign([]byte(secret), now, signed),
		"method": signed.Method, "host": signed.Host, "target": signed.Target, "now": now.Unix()})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1",
		"EC_URL=http://"+w.center.IngressAddr(), "EC_TOKEN="+bizID+"-producer-token-0123456789", "EC_BIZ="+bizID,
		"EC_SECRET="+secret, fmt.Sprintf("EC_GOOD_PORT=%d", w.ports[bizID][0]), fmt.Sprintf("EC_BAD_PORT=%d", w.ports[bizID][1]),
		"EC_VECTOR="+string(vector), "EC_SETTLED_CASES="+settledCasesJSON(t))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "driver failed:\n%s", stderr.String())
	var res driverResult
	require.NoError(t, json.Unmarshal(out, &res), "driver output:\n%s\n%s", out, stderr.String())

	require.True(t, res.VectorOK, "the center's signature verifies")
	for _, tamper := range []string{"target", "host", "secret", "stale"} {
		require.NotEqual(t, "accepted", res.VectorRefused[tamper], "a signature with another %s must be refused", tamper)
		require.NotEmpty(t, res.VectorRefused[tamper], tamper)
	}
	require.Equal(t, "saved", res.CommitResult, "transact returns the local transaction's result")
	require.Equal(t, "insufficient stock", res.RollbackError, "transact re-raises the local transaction's error")
	require.Equal(t, 400, res.Invalid.Status)
	require.Equal(t, "ec-topic", res.Invalid.Field)
	require.Contains(t, res.Invalid.Message, `kafka topic "bad topic!" is invalid: only letters, digits`)
	require.Equal(t, 401, res.Unauthorized)
	require.Equal(t, []string{"prepare", "commit"}, res.Batch)

	require.Equal(t, "SENT", res.Settled["-commit"].SendStatus, "%+v", res.Settled)
	require.Equal(t, "ROLLED_BACK", res.Settled["-rollback"].Status, "%+v", res.Settled)
	require.Equal(t, "COMMITTED", res.Settled["-orphan"].Status, "%+v", res.Settled)
	require.True(t, res.Settled["-orphan"].Orphan, "a COMMIT never prepared says orphan: %+v", res.Settled)
	require.Contains(t, res.Settled["-orphan"].Note, "close-orphan "+bizID+":"+bizID+"-orphan")

	require.Len(t, res.SettledRule, len(settledCases))
	for i, c := range settledCases {
		require.Equal(t, c.settled, res.SettledRule[i], "settled(%s)", c.state)
	}
	st := res.States
	sent := func(k string) {
		require.Equal(t, "COMMITTED", st[k].Status, "%s: %+v", k, st)
		require.NotNil(t, st[k].SendStatus, k)
		require.Equal(t, "SENT", *st[k].SendStatus, k)
	}
	sent(bizID + "-commit")
	sent(bizID + "-checkback")
	sent(bizID + "-batch")
	require.GreaterOrEqual(t, st[bizID+"-checkback"].VerifyAttempts, 1, "settled by a check-back")
	require.Equal(t, "ROLLED_BACK", st[bizID+"-rollback"].Status)
	// The endpoint with the wrong secret refused every call (401, unknown
	// to the center) before deciding anything: still PREPARED.
	require.Equal(t, "PREPARED", st[bizID+"-badsig"].Status)
	require.GreaterOrEqual(t, st[bizID+"-badsig"].VerifyAttempts, 1)
	require.Zero(t, res.Calls["bad"], "an unverified call never reached the decision")
	require.Positive(t, res.Calls["good"])
}

func settledCasesJSON(t *testing.T) string {
	var states []string
	for _, c := range settledCases {
		states = append(states, c.state)
	}
	b, err := json.Marshal(states)
	require.NoError(t, err)
	return string(b)
}

// forwarded is one record read from the business topic.
type forwarded struct {
	Key     *string           `json:"key"`
	Value   string            `json:"value"`
	Headers map[string]string `json:"headers"`
}

// checkForwarded: exactly the committed messages were forwarded, with
// their forward key, payload and headers (and ec-id).
func checkForwarded(t *testing.T, recs []forwarded, bizIDs ...string) {
	t.Helper()
	byID := map[string]forwarded{}
	for _, r := range recs {
		byID[r.Headers["ec-id"]] = r
	}
	var ids []string
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var want []string
	for _, b := range bizIDs {
		want = append(want, b+":"+b+"-batch", b+":"+b+"-checkback", b+":"+b+"-commit")
	}
	sort.Strings(want)
	require.Equal(t, want, ids, "only committed messages are forwarded")
	for _, b := range bizIDs {
		r := byID[b+":"+b+"-commit"]
		// Compressible: franz-go leaves a batch uncompressed when
		// compressing does not make it smaller.
		require.Equal(t, strings.Repeat("payload "+b, 40), r.Value)
		require.NotNil(t, r.Key)
		require.Equal(t, b+"-commit", *r.Key)
		require.Equal(t, "t-"+b, r.Headers["Trace-Id"], "forwarded header, case kept")
		require.Equal(t, "checked back", byID[b+":"+b+"-checkback"].Value)
		require.Equal(t, "batched", byID[b+":"+b+"-batch"].Value)
	}
}

// readGo reads n forwarded records with franz-go.
func (w *world) readGo(t *testing.T, n int) []forwarded {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.cluster.ListenAddrs()...), kgo.ConsumeTopics(businessTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out []forwarded
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d", len(out), n)
		fs.EachRecord(func(r *kgo.Record) {
			if strings.HasSuffix(string(r.Key), "-commit") {
				require.Equal(t, uint8(1), r.Attrs.CompressionType(), "gzip, the default")
			}
			f := forwarded{Value: string(r.Value), Headers: map[string]string{}}
			if r.Key != nil {
				k := string(r.Key)
				f.Key = &k
			}
			for _, h := range r.Headers {
				f.Headers[h.Key] = string(h.Value)
			}
			out = append(out, f)
		})
	}
	return out
}

// TestPythonClient drives clients/python against the center and reads the
// forwarded records.
func TestPythonClient(t *testing.T) {
	python := needTool(t, "python3")
	w := newWorld(t, "py")
	w.runDriver(t, "py", python, filepath.Join("python", "tests", "e2e_driver.py"))
	checkForwarded(t, w.readGo(t, 3), "py")
}

// TestNodeClient drives clients/node against the center and reads the
// forwarded records with KafkaJS 2.x under the default configuration:
// KafkaJS reads no snappy without a codec package, so this fails if the
// center forwards snappy (franz-go's default) again.
func TestNodeClient(t *testing.T) {
	node := needTool(t, "node")
	npm := needTool(t, "npm")
	w := newWorld(t, "node")
	w.runDriver(t, "node", node, filepath.Join("node", "test", "e2e-driver.mjs"))

	// KafkaJS, pinned by the checked-in lock file, installed in a
	// temporary directory (CI has no npm cache).
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "consume.mjs"} {
		b, err := os.ReadFile(filepath.Join("node", "test", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o600))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	install.Dir = dir
	install.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(dir, ".npm"))
	if b, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm ci (KafkaJS): %v\n%s", err, b)
	}
	consume := exec.CommandContext(ctx, node, "consume.mjs", w.cluster.ListenAddrs()[0], businessTopic, "3")
	consume.Dir = dir
	var stderr strings.Builder
	consume.Stderr = &stderr
	out, err := consume.Output()
	require.NoError(t, err, "KafkaJS consumer:\n%s", stderr.String())
	var recs []forwarded
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		var f forwarded
		require.NoError(t, json.Unmarshal([]byte(line), &f), line)
		recs = append(recs, f)
	}
	checkForwarded(t, recs, "node")
}
