package admin_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
)

// In open (insecure, no-token) mode only loopback Host values are served:
// a page on another site, its name re-pointed at 127.0.0.1 (DNS
// rebinding), is refused before anything runs.
func TestOpenModeAnswersLoopbackHostsOnly(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil, func(c *admin.Config) { c.Tokens, c.Insecure = nil, true })
	send := func(method, path, host string, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, env.Server.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Host = host
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	for _, host := range []string{"localhost:8080", "LOCALHOST", "127.0.0.1:8081", "127.1.2.3", "[::1]:8080", "[::1]"} {
		code, body := send("GET", "/api/v1/counts", host, "")
		require.Equal(t, http.StatusOK, code, "%s: %s", host, body)
		code, body = send("GET", "/ui/", host, "")
		require.Equal(t, http.StatusOK, code, "%s: %s", host, body)
	}
	for _, host := range []string{"evil.example:8080", "evil.example", "10.0.0.1:8080", "localhost.evil.example", "0.0.0.0:8080"} {
		code, body := send("GET", "/api/v1/counts", host, "")
		require.Equal(t, http.StatusForbidden, code, host)
		require.Contains(t, body, "answer only requests addressed to localhost")
		require.Contains(t, body, "configure admin tokens")
		code, body = send("GET", "/ui/messages", host, "")
		require.Equal(t, http.StatusForbidden, code, host)
		require.Contains(t, body, "DNS rebinding")
		// And it cannot act.
		code, _ = send("POST", "/api/v1/bizids/orders/retry", host, `{"reason":"x"}`)
		require.Equal(t, http.StatusForbidden, code, host)
	}
	requireUnchanged(t, env)

	// With tokens, any Host is served (the token is the protection).
	withTokens := admintest.New(t, nil)
	req, err := http.NewRequestWithContext(t.Context(), "GET", withTokens.Server.URL+"/api/v1/counts", nil)
	require.NoError(t, err)
	req.Host = "eventcenter.internal.example:8080"
	req.Header.Set("Authorization", "Bearer "+admintest.ReadToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
