package clientlib

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// checkbackDecisions answers by key: c… commit, r… rollback, e… error,
// anything else unknown.
func checkbackDecisions(_ context.Context, bizID, key string) (Decision, error) {
	switch {
	case bizID == "":
		return DecisionUnknown, errors.New("no bizID")
	case strings.HasPrefix(key, "c"):
		return DecisionCommit, nil
	case strings.HasPrefix(key, "r"):
		return DecisionRollback, nil
	case strings.HasPrefix(key, "e"):
		return DecisionUnknown, errors.New("database down")
	}
	return DecisionUnknown, nil
}

func newTestCheckbackHandler(opts ...CheckbackOption) http.Handler {
	opts = append([]CheckbackOption{WithCheckbackLogger(slog.New(slog.DiscardHandler))}, opts...)
	return NewCheckbackHandler(checkbackDecisions, opts...)
}

func serve(h http.Handler, method, target, contentType, body string) (int, string, http.Header) {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, strings.TrimSpace(w.Body.String()), w.Header()
}

func TestCheckbackHandlerHTTP(t *testing.T) {
	t.Parallel()
	h := newTestCheckbackHandler()
	for _, tc := range []struct {
		name, target string
		code         int
		body         string
	}{
		{"commit", "/cb?bizID=1001&messageKey=c1&attempt=1", 200, `{"status":"SUCCESS","data":{"messageKey":"c1","messageStatus":2}}`},
		{"rollback", "/cb?bizID=1001&messageKey=r1", 200, `{"status":"SUCCESS","data":{"messageKey":"r1","messageStatus":3}}`},
		{"unknown", "/cb?bizID=1001&messageKey=u1", 200, `{"status":"SUCCESS","data":{"messageKey":"u1","messageStatus":1}}`},
		{"error", "/cb?bizID=1001&messageKey=e1", 500, `{"message":"check-back handler failed","status":"FAIL"}`},
		{"missing key", "/cb?bizID=1001", 400, `{"message":"bizID and messageKey are required","status":"FAIL"}`},
		{"path ending in method name", "/x/verifyMessage?bizID=1001&messageKey=c1", 200, `{"status":"SUCCESS","data":{"messageKey":"c1","messageStatus":2}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, body, hdr := serve(h, http.MethodGet, tc.target, "", "")
			require.Equal(t, tc.code, code)
			require.Equal(t, tc.body, body)
			require.Equal(t, "application/json", hdr.Get("Content-Type"))
		})
	}
	code, _, hdr := serve(h, http.MethodPut, "/cb", "", "")
	require.Equal(t, http.StatusMethodNotAllowed, code)
	require.Equal(t, "GET, POST", hdr.Get("Allow"))
}

func TestCheckbackHandlerTriple(t *testing.T) {
	t.Parallel()
	h := newTestCheckbackHandler()
	const path = "/com.example.TxChecker/verifyMessage"
	for _, tc := range []struct {
		name, method, ct, body string
		code                   int
		answer                 string
	}{
		{"commit int bizID", "POST", "application/json", `[1001,"c1"]`, 200, `2`},
		{"rollback string bizID", "POST", "application/json", `["1001","r1"]`, 200, `3`},
		{"unknown with charset", "POST", "application/json; charset=utf-8", `[1001,"u1"]`, 200, `1`},
		{"fn error", "POST", "application/json", `[1001,"e1"]`, 500, `{"code":"internal","message":"check-back handler failed"}`},
		{"no content type", "POST", "", `[1001,"c1"]`, 415, `{"code":"invalid_argument","message":"Content-Type must be application/json"}`},
		{"GET", "GET", "", ``, 405, `{"code":"unimplemented","message":"only POST is served"}`},
		{"not an array", "POST", "application/json", `{"a":1}`, 400, `{"code":"invalid_argument","message":"body must be a JSON array [bizID, messageKey]"}`},
		{"one argument", "POST", "application/json", `[1001]`, 400, `{"code":"invalid_argument","message":"want 2 arguments [bizID, messageKey], got 1"}`},
		{"key not a string", "POST", "application/json", `[1001, 5]`, 400, `{"code":"invalid_argument","message":"messageKey must be a string"}`},
		{"bizID an object", "POST", "application/json", `[{}, "c1"]`, 400, `{"code":"invalid_argument","message":"bizID must be a number or a string"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, body, _ := serve(h, tc.method, path, tc.ct, tc.body)
			require.Equal(t, tc.code, code)
			require.Equal(t, tc.answer, body)
		})
	}
	// Another method name by option.
	h2 := newTestCheckbackHandler(WithTripleMethod("check"))
	code, body, _ := serve(h2, "POST", "/svc.Tx/check", "application/json", `[1,"c1"]`)
	require.Equal(t, 200, code)
	require.Equal(t, "2", body)
}

func TestCheckbackHandlerJSONRPC(t *testing.T) {
	t.Parallel()
	h := newTestCheckbackHandler()
	const path = "/com.example.TxChecker"
	for _, tc := range []struct {
		name, ct, body string
		code           int
		answer         string
	}{
		{"commit", "application/json", `{"jsonrpc":"2.0","method":"verifyMessage","params":[1001,"c1"],"id":1}`, 200,
			`{"jsonrpc":"2.0","id":1,"result":2}`},
		{"rollback, string id, capitalised method", "application/json", `{"jsonrpc":"2.0","method":"VerifyMessage","params":["1001","r1"],"id":"a"}`, 200,
			`{"jsonrpc":"2.0","id":"a","result":3}`},
		{"unknown", "application/json", `{"jsonrpc":"2.0","method":"verifyMessage","params":[1001,"u1"],"id":3}`, 200,
			`{"jsonrpc":"2.0","id":3,"result":1}`},
		{"fn error", "application/json", `{"jsonrpc":"2.0","method":"verifyMessage","params":[1001,"e1"],"id":4}`, 200,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"check-back handler failed"}}`},
		{"parse error", "application/json", `{"jsonrpc":"2.0",`, 200,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`},
		{"batch", "application/json", `[{"jsonrpc":"2.0"}]`, 200,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: want one JSON-RPC 2.0 request object"}}`},
		{"no version", "application/json", `{"method":"verifyMessage","params":[1001,"c1"],"id":5}`, 200,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`},
		{"unknown method", "application/json", `{"jsonrpc":"2.0","method":"drop","params":[1001,"c1"],"id":6}`, 200,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"method \"drop\" not found"}}`},
		{"bad params", "application/json", `{"jsonrpc":"2.0","method":"verifyMessage","params":["c1"],"id":7}`, 200,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"invalid params: want 2 arguments [bizID, messageKey], got 1"}}`},
		{"no content type", "", `{"jsonrpc":"2.0","method":"verifyMessage","params":[1001,"c1"],"id":8}`, 415,
			`{"message":"Content-Type must be application/json","status":"FAIL"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, body, _ := serve(h, http.MethodPost, path, tc.ct, tc.body)
			require.Equal(t, tc.code, code)
			require.Equal(t, tc.answer, body)
		})
	}
}

func TestCheckbackHandlerBodyLimit(t *testing.T) {
	t.Parallel()
	h := newTestCheckbackHandler()
	code, _, _ := serve(h, http.MethodPost, "/a/verifyMessage", "application/json", "["+strings.Repeat(" ", maxCheckbackBody)+"]")
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
}

// signV1ForTest is the legacy v1 header, computed independently:
// HMAC-SHA256 of "<t>.<METHOD>.<target>.<body>".
func signV1ForTest(secret string, t int64, method, target, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	ts := strconv.FormatInt(t, 10)
	m.Write([]byte(ts + "." + method + "." + target + "." + body))
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// signV2ForTest is the v2 header for r (as httptest.NewRequest builds it:
// Host example.com) with body.
func signV2ForTest(secret string, at time.Time, r *http.Request, body string) string {
	return checkback.Sign([]byte(secret), at, checkback.SignedRequest(r, []byte(body)))
}

func TestCheckbackHandlerSignature(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	const target = "/com.example.TxChecker/verifyMessage"
	const body = `[1001,"c1"]`
	newReq := func() *http.Request {
		r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	sign := func(secret string, at time.Time, edit func(*http.Request), body string) string {
		r := newReq()
		if edit != nil {
			edit(r)
		}
		return signV2ForTest(secret, at, r, body)
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	for _, tc := range []struct {
		name, header string
		code         int
	}{
		{"good", sign("s3cret", now, nil, body), 200},
		{"good with the older secret", sign("old", now, nil, body), 200},
		{"two v2, one good", sign("s3cret", now, nil, body) + ",v2=00ff", 200},
		{"within the past window", sign("s3cret", now.Add(-4*time.Minute), nil, body), 200},
		{"within the future skew", sign("s3cret", now.Add(25*time.Second), nil, body), 200},
		{"missing", "", 401},
		{"wrong secret", sign("nope", now, nil, body), 401},
		{"other body", sign("s3cret", now, nil, `[1001,"c2"]`), 401},
		{"other path", sign("s3cret", now, func(r *http.Request) { r.RequestURI = "/x/verifyMessage" }, body), 401},
		{"other method", sign("s3cret", now, func(r *http.Request) { r.Method = "GET" }, body), 401},
		{"other host", sign("s3cret", now, func(r *http.Request) { r.Host = "producer.internal:8090" }, body), 401},
		{"other tri version", sign("s3cret", now, func(r *http.Request) { r.Header.Set("tri-service-version", "2.0.0") }, body), 401},
		{"other tri group", sign("s3cret", now, func(r *http.Request) { r.Header.Set("tri-service-group", "order") }, body), 401},
		{"stale", sign("s3cret", now.Add(-6*time.Minute), nil, body), 401},
		{"future beyond the skew", sign("s3cret", now.Add(40*time.Second), nil, body), 401},
		{"future", sign("s3cret", now.Add(6*time.Minute), nil, body), 401},
		{"v1 refused by default", signV1ForTest("s3cret", now.Unix(), "POST", target, body), 401},
		{"garbage", "t=abc,v2=zz", 401},
		{"no v2", "t=" + ts, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A handler per case: the replay cache would refuse a repeat.
			h := newTestCheckbackHandler(WithSecret("old"), WithSecret("s3cret"), WithCheckbackClock(func() time.Time { return now }))
			r := newReq()
			if tc.header != "" {
				r.Header.Set("EC-Signature", tc.header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			require.Equal(t, tc.code, w.Code, w.Body.String())
			if tc.code == 200 {
				require.Equal(t, "2", w.Body.String())
			}
		})
	}
}

// The signature covers the request target as sent, query included, and
// the Host as sent, through a real server.
func TestCheckbackHandlerSignatureQuery(t *testing.T) {
	t.Parallel()
	h := newTestCheckbackHandler(WithSecret("k"))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	target := "/cb?attempt=2&bizID=7&messageKey=c%2F1"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+target, nil)
	require.NoError(t, err)
	req.Header.Set("EC-Signature", checkback.Sign([]byte("k"), time.Now(),
		checkback.Signed{Method: "GET", Host: strings.TrimPrefix(srv.URL, "http://"), Target: target}))
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, string(b))
	require.JSONEq(t, `{"status":"SUCCESS","data":{"messageKey":"c/1","messageStatus":2}}`, string(b))
}

func TestCheckbackHandlerNilFunc(t *testing.T) {
	t.Parallel()
	h := NewCheckbackHandler(nil, WithCheckbackLogger(slog.New(slog.DiscardHandler)))
	code, body, _ := serve(h, http.MethodGet, "/cb?bizID=1&messageKey=c1", "", "")
	require.Equal(t, http.StatusInternalServerError, code)
	require.Contains(t, body, "FAIL")
}

func TestDecisionString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "commit", DecisionCommit.String())
	require.Equal(t, "rollback", DecisionRollback.String())
	require.Equal(t, "unknown", DecisionUnknown.String())
	require.Equal(t, "unknown", Decision(9).String())
	require.Equal(t, 1, Decision(9).Status(), "anything unexpected answers unknown")
}

// The handler answers exactly what the center's strict decoder accepts, in
// every protocol and for every decision, signed requests included: the
// request is built by checkback (as the verifier builds it), served by the
// handler and read back by checkback.DecodeAnswer.
func TestCheckbackHandlerRoundTrip(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	h := newTestCheckbackHandler(WithSecret("s3cret"), WithCheckbackClock(func() time.Time { return now }))
	for _, raw := range []string{
		"http://producer:8090/checkback?tenant=a",
		"http://producer:8090/x/verifyMessage",
		"tri://producer:8090/com.example.TxChecker/verifyMessage?version=1.0.0&group=order",
		"tri://producer:8090/com.example.TxChecker/verifyMessage?bizid=string",
		"jsonrpc://producer:8090/com.example.TxChecker",
		"jsonrpc://producer:8090/com.example.TxChecker?method=VerifyMessage&bizid=int",
	} {
		ep, err := checkback.ParseEndpoint(raw)
		require.NoError(t, err)
		for _, tc := range []struct {
			key  string
			want Decision
		}{{"c-1 /x", DecisionCommit}, {"r-1", DecisionRollback}, {"u-1", DecisionUnknown}} {
			for _, bizID := range []string{"1001", "shop"} {
				t.Run(raw+"/"+tc.key+"/"+bizID, func(t *testing.T) {
					t.Parallel()
					q := checkback.Question{BizID: bizID, MessageKey: tc.key, Attempt: 2, ID: 77, Timeout: time.Second}
					r := ep.Request(q)
					req := httptest.NewRequest(r.Method, r.Target(), strings.NewReader(string(r.Body)))
					req.Host = r.URL.Host
					req.Header = r.Header.Clone()
					req.Header.Set(checkback.SignatureHeader, checkback.Sign([]byte("s3cret"), now, r.Signed()))
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					require.Equal(t, http.StatusOK, w.Code, w.Body.String())
					d, err := checkback.DecodeAnswer(ep.Protocol, q, w.Header().Get("Content-Type"), w.Body.Bytes())
					require.NoError(t, err, w.Body.String())
					require.Equal(t, tc.want, d)
				})
			}
		}
	}
}

// A failing CheckbackFunc is never read as a decision by the center.
func TestCheckbackHandlerErrorsReadAsUnknown(t *testing.T) {
	t.Parallel()
	h := newTestCheckbackHandler()
	for _, raw := range []string{
		"http://p/cb", "tri://p/a.B/verifyMessage", "jsonrpc://p/a.B",
	} {
		ep, err := checkback.ParseEndpoint(raw)
		require.NoError(t, err)
		q := checkback.Question{BizID: "1", MessageKey: "e-1", ID: 1}
		r := ep.Request(q)
		req := httptest.NewRequest(r.Method, r.Target(), strings.NewReader(string(r.Body)))
		req.Header = r.Header.Clone()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			continue // non-2xx: the center reads unknown without looking at the body
		}
		d, err := checkback.DecodeAnswer(ep.Protocol, q, w.Header().Get("Content-Type"), w.Body.Bytes())
		require.Equal(t, DecisionUnknown, d, raw)
		require.Error(t, err, raw)
	}
}
