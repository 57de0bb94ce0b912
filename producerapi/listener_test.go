package producerapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// serve runs the handler on a real listener; the server is closed at
// cleanup.
func (f *fixture) serve() *httptest.Server {
	f.t.Helper()
	srv := httptest.NewServer(f.h)
	f.t.Cleanup(srv.Close)
	return srv
}

// In open mode (insecure, no tokens: what dev runs), the producer
// listener serves only requests addressed to this machine, and no browser
// page on another site: a DNS-rebinding or cross-site page can neither
// write envelopes nor read states. A batch is JSON only with a JSON
// content type (text/plain is what a page can send without a preflight).
// Black box, through a real listener, as the finding was reproduced.
func TestOpenModeRefusesOtherSites(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.Tokens, c.Insecure = nil, true })
	srv := f.serve()
	const batch = `{"envelopes":[{"type":"commit","biz_id":"orders","key":"b"}]}`
	for _, c := range []struct {
		name         string
		method, path string
		body         string
		header       []string
		want         int
		says         string
	}{
		{"another Host, as a rebinding page sends it", "POST", "/v1/messages/orders/k/commit", "",
			[]string{"Host", "attacker.example:8081", "Origin", "http://attacker.example", "Sec-Fetch-Site", "cross-site", "Content-Type", "text/plain"}, 403, `attacker.example:8081\" refused`},
		{"another Host, no browser headers", "GET", "/v1/messages/orders/k", "", []string{"Host", "attacker.example:8081"}, 403, "DNS rebinding"},
		{"cross-site POST to a loopback Host", "POST", "/v1/messages/orders/k/prepare?ec-topic=t", "x",
			[]string{"Origin", "http://attacker.example", "Sec-Fetch-Site", "cross-site", "Content-Type", "text/plain"}, 403, "cross-origin"},
		{"cross-site GET reads no state", "GET", "/v1/messages/orders/k", "", []string{"Sec-Fetch-Site", "cross-site"}, 403, "cross-origin"},
		{"same-site page on another port", "GET", "/v1/messages/orders/k", "", []string{"Sec-Fetch-Site", "same-site"}, 403, "cross-origin"},
		{"an Origin that is not the Host", "POST", "/v1/messages/orders/k/commit", "", []string{"Origin", "http://localhost:3000"}, 403, "cross-origin"},
		{"a batch sent as text/plain", "POST", "/v1/batch", batch, []string{"Content-Type", "text/plain"}, 415, "application/json"},
		{"a batch without a content type", "POST", "/v1/batch", batch, nil, 415, "application/json"},
	} {
		code, body := send(t, srv, c.method, c.path, strings.NewReader(c.body), c.header...)
		require.Equal(t, c.want, code, "%s: %s", c.name, body)
		require.Contains(t, body, c.says, c.name)
	}
	require.Empty(t, f.prod.produced(), "nothing written")

	// Loopback names, tools that send no browser headers, and a page
	// opened from the API itself pass.
	for _, host := range []string{"", "localhost:8081", "127.0.0.1", "[::1]:8081", "LOCALHOST."} {
		hdr := []string{"Content-Type", "application/json"}
		if host != "" {
			hdr = append(hdr, "Host", host)
		}
		code, body := send(t, srv, "POST", "/v1/batch", strings.NewReader(batch), hdr...)
		require.Equal(t, http.StatusAccepted, code, "Host %q: %s", host, body)
	}
	code, body := send(t, srv, "GET", "/v1/openapi.json", nil, "Sec-Fetch-Site", "none")
	require.Equal(t, http.StatusOK, code, body)
	code, body = send(t, srv, "POST", "/v1/messages/orders/k/commit", nil, "Origin", srv.URL, "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusAccepted, code, body)

	// With tokens the Host is not checked (a deployment has its own
	// names); cross-site browser requests are still refused.
	f = newFixture(t)
	srv = f.serve()
	code, body = send(t, srv, "POST", "/v1/messages/orders/k/commit", nil, "Host", "ec.example.com", "Authorization", "Bearer "+ordersToken)
	require.Equal(t, http.StatusAccepted, code, body)
	code, body = send(t, srv, "POST", "/v1/messages/orders/k/commit", nil, "Sec-Fetch-Site", "cross-site", "Authorization", "Bearer "+ordersToken)
	require.Equal(t, http.StatusForbidden, code, body)
}

// Every route answers the listener's refusals, as openapi.json documents:
// 403 for a cross-origin browser request, 400 for a query that is not
// text, 503 with Retry-After past ingress.max_concurrent.
func TestListenerRefusalsOnEveryRoute(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.MaxConcurrent = 1 })
	// reading is closed when a batch's body is first read: its handler
	// then holds the only slot.
	reading, served := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			r.Body = signalBody{ReadCloser: r.Body, first: func() { once.Do(func() { close(reading) }) }}
			defer close(served)
		}
		f.h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	auth := []string{"Authorization", "Bearer " + allToken}
	for _, rt := range routes {
		path := strings.NewReplacer("{bizID}", "orders", "{key}", "k").Replace(rt.path)
		code, body := send(t, srv, rt.method, path, nil, append([]string{"Sec-Fetch-Site", "cross-site"}, auth...)...)
		require.Equal(t, http.StatusForbidden, code, "%s: %s", rt.name, body)
		code, body = send(t, srv, rt.method, path+"?ec-h-x=%00", nil, auth...)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", rt.name, body)
		require.Contains(t, body, "NUL byte or invalid UTF-8")
	}

	// One batch whose body never ends holds the only slot.
	pr, pw := io.Pipe()
	held := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/v1/batch", pr)
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Hold", "1")
			req.Header.Set(auth[0], auth[1])
			var resp *http.Response
			if resp, err = srv.Client().Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		held <- err
	}()
	go func() { _, _ = pw.Write([]byte(`{"envelopes":[`)) }()
	<-reading
	for _, rt := range routes {
		path := strings.NewReplacer("{bizID}", "orders", "{key}", "k").Replace(rt.path)
		req, err := http.NewRequestWithContext(t.Context(), rt.method, srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set(auth[0], auth[1])
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s: %s", rt.name, b)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		require.Contains(t, string(b), "ingress.max_concurrent")
	}
	require.NoError(t, pw.CloseWithError(fmt.Errorf("client gave up")))
	if err := <-held; err != nil { // an error or a 400: either way the request is over
		t.Logf("the held request ended with %v", err)
	}
	<-served // and its handler returned
	code, body := send(t, srv, "GET", "/v1/openapi.json", nil)
	require.Equal(t, http.StatusOK, code, "the slot is free again: %s", body)
}
