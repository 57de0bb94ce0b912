package httpguard

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLoopbackHost(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"localhost", "LOCALHOST:8081", "localhost.", "127.0.0.1", "127.1.2.3:80", "[::1]", "[::1]:8081", "::1"} {
		require.True(t, LoopbackHost(h), h)
	}
	for _, h := range []string{"", "attacker.example:8081", "localhost.attacker.example", "10.0.0.1", "[::2]:1", "127.0.0.1.nip.io", "0.0.0.0"} {
		require.False(t, LoopbackHost(h), h)
	}
}

// Cross-origin browser requests are refused by the protection's rule;
// with allMethods, reads too. Tools that send neither header pass.
func TestCrossOrigin(t *testing.T) {
	t.Parallel()
	req := func(method string, hdr ...string) *http.Request {
		r := httptest.NewRequest(method, "http://127.0.0.1:8081/x", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		return r
	}
	writes, all := NewCrossOrigin(false), NewCrossOrigin(true)
	for _, c := range []struct {
		r             *http.Request
		writes, reads bool // refused by writes-only, by all
	}{
		{req("POST"), false, false},
		{req("POST", "Sec-Fetch-Site", "same-origin"), false, false},
		{req("POST", "Sec-Fetch-Site", "none"), false, false},
		{req("POST", "Sec-Fetch-Site", "cross-site"), true, true},
		{req("POST", "Sec-Fetch-Site", "same-site"), true, true},
		{req("POST", "Origin", "http://attacker.example"), true, true},
		{req("POST", "Origin", "http://127.0.0.1:8081"), false, false},
		{req("GET", "Sec-Fetch-Site", "cross-site"), false, true},
		{req("HEAD", "Origin", "http://attacker.example"), false, true},
		{req("OPTIONS", "Sec-Fetch-Site", "cross-site"), false, true},
		{req("GET"), false, false},
	} {
		require.Equal(t, c.writes, writes.Check(c.r) != nil, "%s %v", c.r.Method, c.r.Header)
		method := c.r.Method
		require.Equal(t, c.reads, all.Check(c.r) != nil, "%s %v", c.r.Method, c.r.Header)
		require.Equal(t, method, c.r.Method, "the request is not changed")
	}
	denied := false
	h := all.Handler(http.NotFoundHandler(), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { denied = true }))
	h.ServeHTTP(httptest.NewRecorder(), req("GET", "Sec-Fetch-Site", "cross-site"))
	require.True(t, denied)
}

// Limit serves n at once and turns the rest away at once.
func TestLimit(t *testing.T) {
	t.Parallel()
	in, out := make(chan struct{}), make(chan struct{})
	h := Limit(2, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { in <- struct{}{}; <-out }),
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil)) })
		<-in
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	close(out)
	wg.Wait()
	go func() { <-in }()
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	require.Equal(t, http.StatusOK, w.Code, "the slots are free again")
}

func TestTextErr(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"/v1/messages/a/b":      "",
		"/v1/messages/a/k%00":   "path: contains a NUL byte or invalid UTF-8",
		"/v1/messages/a/k%FF":   "path: contains a NUL byte or invalid UTF-8",
		"/x?ok=%C3%A9":          "",
		"/x?%00=1":              "a query parameter name: contains a NUL byte or invalid UTF-8",
		"/x?k=%FE":              `query parameter "k": contains a NUL byte or invalid UTF-8`,
		"/v1/messages/%E2%82/b": "path: contains a NUL byte or invalid UTF-8",
	} {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		got := TextErr(&http.Request{URL: u})
		if want == "" {
			require.NoError(t, got, raw)
			continue
		}
		require.ErrorIs(t, got, ErrBadText, raw)
		require.EqualError(t, got, want, raw)
	}
}

func TestJSONContentType(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON", "application/problem+json"} {
		require.True(t, JSONContentType(ct), ct)
	}
	for _, ct := range []string{"", "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", "json"} {
		require.False(t, JSONContentType(ct), ct)
	}
}
