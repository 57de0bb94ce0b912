package center

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

// openIngress starts a center whose producer API runs as dev runs it
// (ingress.insecure, no tokens, on 127.0.0.1); edit changes the
// configuration first. It returns the API's base URL.
func openIngress(t *testing.T, edit func(*config.Config)) string {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "eventcenter.control", "eventcenter.control.dlq"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	cfg := testConfig(t, cluster.ListenAddrs())
	cfg.Ingress.Listen, cfg.Ingress.Insecure = "127.0.0.1:0", true
	if edit != nil {
		edit(&cfg)
	}
	il, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c, err := New(t.Context(), cfg, Options{Logger: quiet(), IngressListener: il})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	})
	return "http://" + c.IngressAddr()
}

// call sends one request; "Host" in hdr sets the Host header.
func call(t *testing.T, method, u, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// The producer API as dev serves it refuses what a web page could send it:
// the request of the finding (another Host, a cross-site Origin and
// Sec-Fetch-Site, text/plain) is 403 and writes nothing; a batch of JSON
// sent as text/plain is 415; a cross-site GET reads no state. A client on
// the machine is served.
func TestProducerAPIOpenModeRefusesWebPages(t *testing.T) {
	t.Parallel()
	base := openIngress(t, nil)
	page := []string{"Origin", "http://attacker.example", "Sec-Fetch-Site", "cross-site", "Content-Type", "text/plain"}
	code, body := call(t, "POST", base+"/v1/messages/orders/k/prepare?ec-topic=orders.events", "x", append(page, "Host", "attacker.example:8081")...)
	require.Equal(t, http.StatusForbidden, code, body)
	code, body = call(t, "POST", base+"/v1/messages/orders/k/commit", "", append(page, "Host", "attacker.example:8081")...)
	require.Equal(t, http.StatusForbidden, code, body)
	code, body = call(t, "POST", base+"/v1/messages/orders/k/commit", "", page...)
	require.Equal(t, http.StatusForbidden, code, body)
	code, body = call(t, "POST", base+"/v1/batch", `{"envelopes":[{"type":"commit","biz_id":"orders","key":"k"}]}`, "Content-Type", "text/plain")
	require.Equal(t, http.StatusUnsupportedMediaType, code, body)
	code, body = call(t, "GET", base+"/v1/messages/orders/k", "", "Sec-Fetch-Site", "cross-site")
	require.Equal(t, http.StatusForbidden, code, body)
	code, body = call(t, "GET", base+"/v1/messages/orders/k", "", "Host", "attacker.example:8081")
	require.Equal(t, http.StatusForbidden, code, body)

	code, body = call(t, "GET", base+"/v1/messages/orders/k", "")
	require.Equal(t, http.StatusNotFound, code, "nothing was written: %s", body)
	code, body = call(t, "POST", base+"/v1/messages/orders/k/commit", "")
	require.Equal(t, http.StatusAccepted, code, body)
}

// A GET whose bizID or key holds a NUL byte or invalid UTF-8 is a bad
// request (400), not "store unavailable" (503 with Retry-After, which the
// clients retry and the error alert counts): on PostgreSQL, whose text
// type refuses both.
func TestProducerAPIPathNotTextOnPostgres(t *testing.T) {
	t.Parallel()
	base := openIngress(t, func(c *config.Config) {
		c.Store = config.Store{Driver: "postgres", DSN: pgtest.DSN(t), MaxConns: 2, AutoMigrate: true}
	})
	for _, path := range []string{"/v1/messages/orders/k%00", "/v1/messages/orders/k%FF", "/v1/messages/or%00ders/k", "/v1/messages/orders/k?x=%00"} {
		code, body := call(t, "GET", base+path, "")
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", path, body)
		require.Contains(t, body, "NUL byte or invalid UTF-8", path)
	}
	code, body := call(t, "GET", base+"/v1/messages/orders/k", "")
	require.Equal(t, http.StatusNotFound, code, body)
}
