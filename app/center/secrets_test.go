package center

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib/kafkaauth"
	"github.com/eventcenter/eventcenter/testsupport/logbuf"
)

func writeSecret(t *testing.T, dir, name, v string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(v+"\n"), 0o600))
	return p
}

// get does a request with an optional bearer token and returns the status
// and body.
func get(t *testing.T, cl *http.Client, u, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := cl.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestCanarySecretsNeverShow runs a center whose every secret (admin token
// from a file, check-back secret from a file, Kafka SASL password) holds a
// canary, drives its HTTP surface and a start-up failure, and greps all the
// output for the canary: logs (debug level), /readyz, /metrics, the API,
// the console, errors.
func TestCanarySecretsNeverShow(t *testing.T) {
	t.Parallel()
	const canary = "CANARY-7f3e9a1c5d"
	dir := t.TempDir()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "eventcenter.control", "eventcenter.control.dlq"),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", "center", canary+"-kafka"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	logs := &logbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var seen []string

	body := `
kafka:
  brokers: [` + cluster.ListenAddrs()[0] + `]
  sasl: {mechanism: PLAIN, username: center, password_file: ` + writeSecret(t, dir, "kafka", canary+"-kafka") + `}
store: {driver: sqlite, dsn: ` + filepath.Join(dir, "ec.db") + `, max_conns: 1, auto_migrate: true}
admin:
  tokens:
    - {name: ops, scope: admin, token_file: ` + writeSecret(t, dir, "token", canary+"-admin") + `}
checkback:
  biz:
    - {biz_id: orders, secret_file: ` + writeSecret(t, dir, "cb", canary+"-cb") + `}
`
	cfgFile := writeSecret(t, dir, "eventcenter.yaml", body)
	cfg, err := config.Load(cfgFile)
	require.NoError(t, err)

	// A wrong Kafka password: the start-up error and its logs.
	bad := cfg
	bad.Kafka.Auth.SASL = kafkaauth.SASL{Mechanism: "PLAIN", Username: "center", Password: canary + "-wrong"}
	_, err = New(t.Context(), bad, Options{Logger: log})
	require.Error(t, err)
	seen = append(seen, err.Error())

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c, err := New(t.Context(), cfg, Options{Logger: log, Listener: l})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	base := "http://" + c.Addr()
	hc := &http.Client{}
	require.Eventually(t, func() bool {
		code, _ := get(t, hc, base+"/readyz", "")
		return code == http.StatusOK
	}, 20*time.Second, 10*time.Millisecond)
	for _, p := range []string{"/readyz", "/metrics", "/healthz", "/api/v1/counts", "/api/v1/messages", "/api/v1/audit", "/api/v1/dlq"} {
		for _, tok := range []string{"", canary + "-admin", "wrong-" + canary} {
			_, b := get(t, hc, base+p, tok)
			seen = append(seen, b)
		}
	}
	// The console, logged in with the token, and a failed login.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	bc := &http.Client{Jar: jar}
	for _, tok := range []string{"wrong-" + canary, canary + "-admin"} {
		resp, err := bc.PostForm(base+"/ui/login", url.Values{"token": {tok}, "next": {"/ui/"}})
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		seen = append(seen, string(b))
	}
	for _, p := range []string{"/ui/", "/ui/messages", "/ui/dlq"} {
		code, b := get(t, bc, base+p, "")
		require.Equal(t, http.StatusOK, code, p)
		if p == "/ui/" {
			// The center wires the trends sampler into the overview.
			require.Contains(t, b, `id="trend-forwarded"`)
			require.Contains(t, b, `id="outcomes"`)
		}
		seen = append(seen, b)
	}
	// The store fails: /readyz says only that without a token.
	require.NoError(t, c.Store.Close())
	code, b := get(t, hc, base+"/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.NotContains(t, b, "closed", "no store error text without a token")
	require.Contains(t, b, "store: unavailable")
	code, b = get(t, hc, base+"/readyz", canary+"-admin")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, b, "closed", "the error with a token")
	seen = append(seen, b)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = c.Stop(ctx)
	seen = append(seen, logs.String())
	all := strings.Join(seen, "\n")
	require.NotEmpty(t, logs.String())
	require.NotContains(t, all, canary, "a secret leaked")
}

// TestSecretFilesAreReread: a rotated admin token file and check-back
// secret file take effect without a restart (on change, and on SIGHUP);
// an emptied file leaves the previous token in force.
func TestSecretFilesAreReread(t *testing.T) {
	dir := t.TempDir()
	tokFile := writeSecret(t, dir, "token", "first-token-0123456789")
	cbFile := writeSecret(t, dir, "cb", "first-secret")
	cfg := testConfig(t, []string{"127.0.0.1:1"})
	cfg.Admin.Insecure = false
	cfg.Admin.Tokens = []config.Token{{Name: "ops", Scope: "admin", TokenFile: tokFile}}
	cfg.Checkback.Biz = []config.Biz{{BizID: "orders", SecretFile: cbFile}}
	require.NoError(t, cfg.ResolveSecrets())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c, err := New(t.Context(), cfg, Options{Logger: quiet(), Listener: l, SecretCheckInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	})
	hc := &http.Client{}
	api := "http://" + c.Addr() + "/api/v1/counts"
	code, _ := get(t, hc, api, "first-token-0123456789")
	require.Equal(t, http.StatusOK, code)
	secret := c.secrets.BizSecret("orders")
	require.Equal(t, "first-secret", secret())

	// Rotation by changing the files (a later mtime and another size).
	require.NoError(t, os.WriteFile(tokFile, []byte("second-token-0123456789\n"), 0o600))
	require.NoError(t, os.WriteFile(cbFile, []byte("second-secret-x\n"), 0o600))
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(tokFile, later, later))
	require.NoError(t, os.Chtimes(cbFile, later, later))
	require.Eventually(t, func() bool {
		code, _ := get(t, hc, api, "second-token-0123456789")
		return code == http.StatusOK
	}, 10*time.Second, 5*time.Millisecond)
	code, _ = get(t, hc, api, "first-token-0123456789")
	require.Equal(t, http.StatusUnauthorized, code, "the old token no longer works")
	// The two files are written one after the other: a check between the
	// writes re-reads the token, the next one the secret.
	require.Eventually(t, func() bool { return secret() == "second-secret-x" }, 10*time.Second, 5*time.Millisecond)

	// SIGHUP re-reads at once: this rewrite keeps the size and the
	// modification time, so only the signal can make it seen.
	before := counter(t, c, "eventcenter_secret_reloads_total")
	tmp := filepath.Join(dir, "token.new")
	require.NoError(t, os.WriteFile(tmp, []byte("thirdx-token-0123456789\n"), 0o600))
	require.NoError(t, os.Chtimes(tmp, later, later))
	require.NoError(t, os.Rename(tmp, tokFile))
	code, _ = get(t, hc, api, "thirdx-token-0123456789")
	require.Equal(t, http.StatusUnauthorized, code, "not seen without the signal")
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGHUP))
	require.Eventually(t, func() bool { return counter(t, c, "eventcenter_secret_reloads_total") > before }, 10*time.Second, 5*time.Millisecond)
	code, _ = get(t, hc, api, "thirdx-token-0123456789")
	require.Equal(t, http.StatusOK, code)

	// An emptied file keeps the previous token and is counted.
	require.NoError(t, os.WriteFile(tokFile, nil, 0o600))
	require.NoError(t, os.Chtimes(tokFile, later.Add(time.Minute), later.Add(time.Minute)))
	require.Eventually(t, func() bool { return counter(t, c, "eventcenter_secret_reload_errors_total") >= 1 }, 10*time.Second, 5*time.Millisecond)
	code, _ = get(t, hc, api, "thirdx-token-0123456789")
	require.Equal(t, http.StatusOK, code)

}

func counter(t *testing.T, c *Center, name string) float64 {
	t.Helper()
	mfs, err := c.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
