package verifier

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// recorded is one request a test producer saw.
type recorded struct {
	Method, Target, Body string
	Header               http.Header
}

// producer is an httptest server answering every request with the same
// status and body, recording what it got.
type producer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newProducer(t *testing.T, h http.HandlerFunc) *producer {
	t.Helper()
	p := &producer{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.reqs = append(p.reqs, recorded{r.Method, r.RequestURI, string(b), r.Header.Clone()})
		p.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		h(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func answering(code int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// reply answers a check-back with d in the request's protocol, in the
// exact shape clientlib's handler writes: TrustMessage's object echoing the
// messageKey for a GET, the bare integer for Triple, a JSON-RPC response
// echoing the id.
func reply(w http.ResponseWriter, r *http.Request, d checkback.Decision) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet {
		_, _ = w.Write(checkback.HTTPAnswer(r.URL.Query().Get("messageKey"), d))
		return
	}
	b, _ := io.ReadAll(r.Body)
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(b, &req) == nil && len(req.ID) > 0 {
		_, _ = w.Write(checkback.JSONRPCAnswer(req.ID, d))
		return
	}
	_, _ = w.Write(checkback.TripleAnswer(d))
}

// replying is a producer answering d to every check-back.
func replying(d checkback.Decision) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { reply(w, r, d) }
}

func (p *producer) requests() []recorded {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]recorded(nil), p.reqs...)
}

// endpoint returns the producer's address in the given scheme.
func (p *producer) endpoint(scheme, rest string) string {
	return scheme + "://" + strings.TrimPrefix(p.srv.URL, "http://") + rest
}

func testCaller(t *testing.T, now func() time.Time) *caller {
	t.Helper()
	tr := newTransport(4)
	t.Cleanup(tr.CloseIdleConnections)
	return newCaller(tr, now, slog.New(slog.DiscardHandler))
}

func doCall(t *testing.T, c *caller, raw, bizID, key string, secret []byte) answer {
	t.Helper()
	ep, err := checkback.ParseEndpoint(raw)
	require.NoError(t, err)
	return c.do(t.Context(), call{ep: ep, bizID: bizID, key: key, attempt: 3, timeout: 2 * time.Second, secret: secret})
}

func TestCallerRequests(t *testing.T) {
	t.Parallel()
	p := newProducer(t, replying(checkback.DecisionCommit))
	c := testCaller(t, time.Now)

	require.Equal(t, answer{Decision: checkback.DecisionCommit}, doCall(t, c, p.endpoint("http", "/cb?tenant=a"), "1001", "order 42/x", nil))
	require.Equal(t, answer{Decision: checkback.DecisionCommit}, doCall(t, c,
		p.endpoint("tri", "/com.example.TxChecker/verifyMessage?version=1.0.0&group=order&bizid=int"), "1001", "order-42", nil))
	require.Equal(t, answer{Decision: checkback.DecisionCommit}, doCall(t, c,
		p.endpoint("tri", "/com.example.TxChecker/verifyMessage?bizid=int"), "b-7", "order-42", nil))
	reqs := p.requests()
	require.Len(t, reqs, 3)

	h := reqs[0]
	require.Equal(t, "GET", h.Method)
	require.Equal(t, "/cb?attempt=3&bizID=1001&messageKey=order+42%2Fx&tenant=a", h.Target)
	require.Empty(t, h.Body)

	tri := reqs[1]
	require.Equal(t, "POST", tri.Method)
	require.Equal(t, "/com.example.TxChecker/verifyMessage", tri.Target)
	require.Equal(t, `[1001,"order-42"]`, tri.Body)
	require.Equal(t, "application/json", tri.Header.Get("Content-Type"))
	require.Equal(t, "1.0.0", tri.Header.Get("tri-service-version"))
	require.Equal(t, "order", tri.Header.Get("tri-service-group"))
	require.Equal(t, "2000", tri.Header.Get("tri-service-timeout"))
	require.Equal(t, "2000", tri.Header.Get("Triple-Timeout-Ms"))
	require.Empty(t, tri.Header.Get(checkback.SignatureHeader))

	require.Equal(t, `["b-7","order-42"]`, reqs[2].Body, "a bizID that is not a number stays a string")
	require.Empty(t, reqs[2].Header.Get("tri-service-version"))
	require.Empty(t, reqs[2].Header.Get("tri-service-group"))

	rpc := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":3}`)
	})
	require.Equal(t, answer{Decision: checkback.DecisionRollback}, doCall(t, c, rpc.endpoint("jsonrpc", "/com.example.TxChecker?bizid=int"), "1001", "k", nil))
	require.Equal(t, answer{Decision: checkback.DecisionRollback}, doCall(t, c, rpc.endpoint("jsonrpc", "/com.example.TxChecker?method=VerifyMessage"), "1001", "k", nil))
	rr := rpc.requests()
	require.Len(t, rr, 2)
	require.Equal(t, "POST", rr[0].Method)
	require.Equal(t, "/com.example.TxChecker", rr[0].Target)
	require.Equal(t, "application/json", rr[0].Header.Get("Content-Type"))
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(rr[0].Body), &body))
	require.Equal(t, "2.0", body["jsonrpc"])
	require.Equal(t, "verifyMessage", body["method"])
	require.Equal(t, []any{float64(1001), "k"}, body["params"])
	require.NotNil(t, body["id"])
	require.Contains(t, rr[1].Body, `"method":"VerifyMessage"`)
	require.Contains(t, rr[1].Body, `"params":[1001,"k"]`, "a numeric bizID is a number without bizid=int")
}

// A numeric bizID goes out as a JSON number on Triple and JSON-RPC unless
// the endpoint says bizid=string; bizid=int still works.
func TestCallerBizIDEncoding(t *testing.T) {
	t.Parallel()
	p := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/rpc") {
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &req)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":2}`)
			return
		}
		reply(w, r, checkback.DecisionCommit)
	})
	c := testCaller(t, time.Now)
	for i, tc := range []struct {
		query, bizID, want string
	}{
		{"", "1001", `1001`},
		{"", "0", `0`},
		{"", "9223372036854775807", `9223372036854775807`},
		{"", "9223372036854775808", `"9223372036854775808"`}, // beyond int64
		{"", "007", `"007"`}, // a number would lose the zeros
		{"", "-5", `"-5"`},
		{"", "+5", `"+5"`},
		{"", "b-7", `"b-7"`},
		{"?bizid=int", "1001", `1001`},
		{"?bizid=int", "007", `7`},
		{"?bizid=int", "-5", `-5`},
		{"?bizid=int", "b-7", `"b-7"`},
		{"?bizid=string", "1001", `"1001"`},
		{"?bizid=string", "b-7", `"b-7"`},
	} {
		// Each case has a path of its own to find its request by.
		method := "m" + strconv.Itoa(i)
		t.Run("tri"+tc.query+"/"+tc.bizID, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, answer{Decision: checkback.DecisionCommit}, doCall(t, c, p.endpoint("tri", "/tri.Svc/"+method+tc.query), tc.bizID, "k", nil))
			require.Equal(t, "["+tc.want+`,"k"]`, bodyFor(t, p, "/tri.Svc/"+method))
		})
		t.Run("jsonrpc"+tc.query+"/"+tc.bizID, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, answer{Decision: checkback.DecisionCommit}, doCall(t, c, p.endpoint("jsonrpc", "/rpc/"+method+tc.query), tc.bizID, "k", nil))
			require.Contains(t, bodyFor(t, p, "/rpc/"+method), `"params":[`+tc.want+`,"k"]`)
		})
	}
}

// bodyFor returns the body of the request p got for target, which must be
// exactly one.
func bodyFor(t *testing.T, p *producer, target string) string {
	t.Helper()
	var bodies []string
	for _, r := range p.requests() {
		if r.Target == target {
			bodies = append(bodies, r.Body)
		}
	}
	require.Len(t, bodies, 1, target)
	return bodies[0]
}

// Garbage answers are unknown and errors, never commit, in every protocol.
func TestCallerGarbageIsUnknown(t *testing.T) {
	t.Parallel()
	c := testCaller(t, time.Now)
	for _, tc := range []struct {
		name, ct, body string
		code           int
		msg            string // "" for ErrUnreadable
	}{
		{"500 with commit body", "application/json", `2`, 500, "HTTP 500"},
		{"404", "text/plain", `not found`, 404, "HTTP 404"},
		{"200 with error body", "application/json", `{"status":"FAIL","message":"db down"}`, 200, ""},
		{"200 HTML", "text/html", `<html><body>OK</body></html>`, 200, ""},
		{"200 HTML commit", "text/html", `2`, 200, ""},
		{"truncated JSON", "application/json", `{"status":"SUCCESS","data":{"messageStatus":2`, 200, ""},
		{"empty 200", "", ``, 200, ""},
		{"redirect", "", ``, 302, "redirect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.code == 302 {
					http.Redirect(w, r, "http://169.254.169.254/latest", http.StatusFound)
					return
				}
				answering(tc.code, tc.ct, tc.body)(w, r)
			})
			for _, ep := range []string{p.endpoint("http", "/cb"), p.endpoint("tri", "/a.B/verifyMessage"), p.endpoint("jsonrpc", "/a.B")} {
				a := doCall(t, c, ep, "1", "k", nil)
				require.Equal(t, checkback.DecisionUnknown, a.Decision, ep)
				if tc.msg == "" {
					require.ErrorIs(t, a.Err, checkback.ErrUnreadable, ep)
				} else {
					require.ErrorContains(t, a.Err, tc.msg, ep)
				}
			}
		})
	}
	t.Run("bare 1 is a clean unknown", func(t *testing.T) {
		t.Parallel()
		p := newProducer(t, replying(checkback.DecisionUnknown))
		require.Equal(t, answer{Decision: checkback.DecisionUnknown}, doCall(t, c, p.endpoint("tri", "/a.B/verifyMessage"), "1", "k", nil))
		require.Equal(t, answer{Decision: checkback.DecisionUnknown}, doCall(t, c, p.endpoint("http", "/"), "1", "k", nil))
		require.Equal(t, answer{Decision: checkback.DecisionUnknown}, doCall(t, c, p.endpoint("jsonrpc", "/a.B"), "1", "k", nil))
	})
	t.Run("JSON-RPC error", func(t *testing.T) {
		t.Parallel()
		p := newProducer(t, answering(200, "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"boom"}}`))
		a := doCall(t, c, p.endpoint("jsonrpc", "/a.B"), "1", "k", nil)
		require.Equal(t, checkback.DecisionUnknown, a.Decision)
		require.ErrorContains(t, a.Err, "JSON-RPC error -32000")
	})
	t.Run("too large", func(t *testing.T) {
		t.Parallel()
		p := newProducer(t, answering(200, "application/json", "2"+strings.Repeat(" ", maxAnswerBytes)))
		a := doCall(t, c, p.endpoint("http", "/"), "1", "k", nil)
		require.Equal(t, checkback.DecisionUnknown, a.Decision)
		require.ErrorContains(t, a.Err, "larger than")
	})
	t.Run("connection dropped", func(t *testing.T) {
		t.Parallel()
		p := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n{\"decision\":")
				_ = conn.Close()
			}
		})
		a := doCall(t, c, p.endpoint("jsonrpc", "/a.B"), "1", "k", nil)
		require.Equal(t, checkback.DecisionUnknown, a.Decision)
		require.Error(t, a.Err)
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		p := newProducer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		ep, err := checkback.ParseEndpoint(p.endpoint("tri", "/a.B/m"))
		require.NoError(t, err)
		a := c.do(t.Context(), call{ep: ep, bizID: "1", key: "k", attempt: 1, timeout: 50 * time.Millisecond})
		require.Equal(t, checkback.DecisionUnknown, a.Decision)
		require.ErrorContains(t, a.Err, "no answer within 50ms")
	})
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		a := doCall(t, c, "http://127.0.0.1:1/cb", "1", "k", nil)
		require.Equal(t, checkback.DecisionUnknown, a.Decision)
		require.ErrorContains(t, a.Err, "call failed")
	})
}

// tris://, https:// and jsonrpcs:// go over TLS.
func TestCallerTLS(t *testing.T) {
	t.Parallel()
	var got []string
	var mu sync.Mutex
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path)
		mu.Unlock()
		reply(w, r, checkback.DecisionCommit)
	}))
	t.Cleanup(srv.Close)
	tr := srv.Client().Transport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	c := newCaller(tr, time.Now, slog.New(slog.DiscardHandler))
	host := strings.TrimPrefix(srv.URL, "https://")
	require.Equal(t, answer{Decision: checkback.DecisionCommit}, doCall(t, c, "https://"+host+"/cb", "1", "k", nil))
	require.Equal(t, answer{Decision: checkback.DecisionCommit}, doCall(t, c, "tris://"+host+"/a.B/verifyMessage", "1", "k", nil))
	require.Equal(t, answer{Decision: checkback.DecisionCommit}, doCall(t, c, "jsonrpcs://"+host+"/rpc", "1", "k", nil))
	require.Equal(t, []string{"GET /cb", "POST /a.B/verifyMessage", "POST /rpc"}, got)
	// Plain http to a TLS port fails and is unknown.
	a := doCall(t, c, "http://"+host+"/cb", "1", "k", nil)
	require.Equal(t, checkback.DecisionUnknown, a.Decision)
	require.ErrorContains(t, a.Err, "HTTP 400")
}
