package producerapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// send sends one request to srv and returns the status and body.
func send(t *testing.T, srv *httptest.Server, method, path string, body io.Reader, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, body)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := clientFor(srv, req).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// clientFor is srv's client, one that waits for "100 Continue" before
// sending the body when req asks for it (Expect: 100-continue): a server
// that answers without reading the body then never sees it, and the
// client gets the answer instead of a reset connection.
func clientFor(srv *httptest.Server, req *http.Request) *http.Client {
	if req.Header.Get("Expect") == "" {
		return srv.Client()
	}
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.ExpectContinueTimeout = time.Minute
	tr.DisableKeepAlives = true // a fresh connection: the server closes it after a body left unread
	return &http.Client{Transport: tr}
}

// countingBody counts what the handler read of a request's body.
type countingBody struct {
	io.ReadCloser
	mu *sync.Mutex
	n  *int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.mu.Lock()
	*c.n += int64(n)
	c.mu.Unlock()
	return n, err
}

// signalBody calls first on the first read of a request's body.
type signalBody struct {
	io.ReadCloser
	first func()
}

func (s signalBody) Read(p []byte) (int, error) {
	s.first()
	return s.ReadCloser.Read(p)
}

// countReads serves h, counting the body bytes it reads.
func countReads(h http.Handler) (http.Handler, func() int64) {
	var mu sync.Mutex
	var n int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = countingBody{ReadCloser: r.Body, mu: &mu, n: &n}
			h.ServeHTTP(w, r)
		}), func() int64 {
			mu.Lock()
			defer mu.Unlock()
			return n
		}
}

// bigBatch is a reader of a batch of about size bytes whose envelopes are
// for bizID, made as it is read (the client holds no copy).
func bigBatch(bizID string, size int) io.Reader {
	env := fmt.Sprintf(`{"type":"prepare","biz_id":%q,"key":"k","payload":%q,"headers":{"ec-topic":"t"}}`, bizID, strings.Repeat("p", 64<<10))
	n := size / (len(env) + 1)
	readers := []io.Reader{strings.NewReader(`{"envelopes":[`)}
	for i := range n {
		if i > 0 {
			readers = append(readers, strings.NewReader(","))
		}
		readers = append(readers, strings.NewReader(env))
	}
	return io.MultiReader(append(readers, strings.NewReader(`]}`))...)
}

// A batch is authorised and rate-limited before its body is read, and
// decoded as it arrives: a token whose rate is used up, or one scoped to
// another bizID, makes the handler read (almost) nothing of an 8 MiB
// body; a body that is not UTF-8 is refused at its first bad byte.
func TestBatchBodyNotReadBeforeAuthorisation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) {
		c.Tokens = append(c.Tokens, Token{Name: "spent", Token: "spent-token-0123456789", BizIDs: []string{"*"}, Rate: 0.001, Burst: 1})
	})
	h, read := countReads(f.h)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	json := []string{"Content-Type", "application/json"}
	// Expect: 100-continue, so that the client does not send a body the
	// server refuses unread (it would be cut off with a reset).
	unread := append(json, "Expect", "100-continue")

	code, body := send(t, srv, "POST", "/v1/messages/orders/k/commit", nil, "Authorization", "Bearer spent-token-0123456789")
	require.Equal(t, http.StatusAccepted, code, body) // the bucket's one envelope
	before := read()
	code, body = send(t, srv, "POST", "/v1/batch", bigBatch("orders", 8<<20), append(unread, "Authorization", "Bearer spent-token-0123456789")...)
	require.Equal(t, http.StatusTooManyRequests, code, body)
	require.Zero(t, read()-before, "a spent token's batch is refused unread")

	before = read()
	code, body = send(t, srv, "POST", "/v1/batch", bigBatch("payments", 8<<20), append(json, "Authorization", "Bearer "+ordersToken)...)
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, body, `"envelopes[0].biz_id"`)
	require.Less(t, read()-before, int64(1<<20), "refused at the first envelope not allowed, not after the whole body")

	before = read()
	bad := io.MultiReader(strings.NewReader(`{"envelopes":[{"type":"prepare","biz_id":"orders","key":"k","payload":"`),
		strings.NewReader(strings.Repeat("\xff", 4<<20)), strings.NewReader(`"}]}`))
	code, body = send(t, srv, "POST", "/v1/batch", bad, append(json, "Authorization", "Bearer "+ordersToken)...)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "not UTF-8")
	require.Less(t, read()-before, int64(1<<20), "refused at the first bad byte")
	require.Empty(t, f.prod.produced()[1:], "only the commit was written")

	// What is allowed still goes through, decoded as a stream.
	code, body = send(t, srv, "POST", "/v1/batch", bigBatch("orders", 1<<20), append(json, "Authorization", "Bearer "+ordersToken)...)
	require.Equal(t, http.StatusAccepted, code, body)
}
