package clientlib

import (
	"context"
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

// The review's forgery: a signature the center sent for
// GET /cb?bizID=1&messageKey=k.2 (empty body) is moved onto
// GET /cb?bizID=1&messageKey=k with the body "2.". Under the old MAC
// ("<t>.<METHOD>.<target>.<body>") both requests hash the same bytes, so the
// handler answered for a message it was never asked about. It must be
// refused: a GET with a body is a bad request, and a v1 signature is not
// accepted unless the producer opts in.
func TestCheckbackHandlerRefusesMovedV1Signature(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	var asked []string
	fn := func(_ context.Context, bizID, key string) (Decision, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, key)
		return DecisionCommit, nil
	}
	h := NewCheckbackHandler(fn, WithSecret("s3cret"), WithCheckbackClock(func() time.Time { return now }))
	captured := signV1ForTest("s3cret", now.Unix(), "GET", "/cb?bizID=1&messageKey=k.2", "")

	r := httptest.NewRequest(http.MethodGet, "/cb?bizID=1&messageKey=k", strings.NewReader("2."))
	r.Header.Set("EC-Signature", captured)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.NotEqual(t, http.StatusOK, w.Code, w.Body.String())
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, asked, "the handler must not look up a message for a forged request")
}

// With the legacy v1 form accepted, the same forgery is still refused: the
// GET carries a body.
func TestCheckbackHandlerRefusesMovedV1SignatureWithLegacyOn(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	h := newTestCheckbackHandler(WithSecret("s3cret"), WithLegacySignatureV1(), WithCheckbackClock(func() time.Time { return now }))
	captured := signV1ForTest("s3cret", now.Unix(), "GET", "/cb?bizID=1&messageKey=c.2", "")
	r := httptest.NewRequest(http.MethodGet, "/cb?bizID=1&messageKey=c", strings.NewReader("2."))
	r.Header.Set("EC-Signature", captured)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())

	// The request it was made for still passes, once.
	for _, want := range []int{http.StatusOK, http.StatusUnauthorized} {
		r = httptest.NewRequest(http.MethodGet, "/cb?bizID=1&messageKey=c.2", nil)
		r.Header.Set("EC-Signature", captured)
		w = httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, want, w.Code, w.Body.String())
	}
}

// A GET with a body is refused whether or not requests are signed.
func TestCheckbackHandlerRefusesGETWithBody(t *testing.T) {
	t.Parallel()
	h := newTestCheckbackHandler()
	code, body, _ := serve(h, http.MethodGet, "/cb?bizID=1&messageKey=c1", "", "x")
	require.Equal(t, http.StatusBadRequest, code, body)
	code, _, _ = serve(h, http.MethodGet, "/cb?bizID=1&messageKey=c1", "", "")
	require.Equal(t, http.StatusOK, code)
}

// v1 is refused by default and accepted with WithLegacySignatureV1; v2 is
// accepted either way; several secrets keep working in both.
func TestCheckbackHandlerLegacyV1Option(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	const target = "/cb?attempt=1&bizID=1&messageKey=c1"
	for _, tc := range []struct {
		name   string
		legacy bool
		header func(secret string) string
		code   int
	}{
		{"v1 by default", false, func(s string) string { return signV1ForTest(s, now.Unix(), "GET", target, "") }, 401},
		{"v1 with the option", true, func(s string) string { return signV1ForTest(s, now.Unix(), "GET", target, "") }, 200},
		{"v2 by default", false, func(s string) string {
			return signV2ForTest(s, now, httptest.NewRequest(http.MethodGet, target, nil), "")
		}, 200},
		{"v2 with the option", true, func(s string) string {
			return signV2ForTest(s, now, httptest.NewRequest(http.MethodGet, target, nil), "")
		}, 200},
	} {
		for _, secret := range []string{"old", "new"} {
			t.Run(tc.name+"/"+secret, func(t *testing.T) {
				t.Parallel()
				opts := []CheckbackOption{WithSecret("old"), WithSecret("new"), WithCheckbackClock(func() time.Time { return now })}
				if tc.legacy {
					opts = append(opts, WithLegacySignatureV1())
				}
				h := newTestCheckbackHandler(opts...)
				r := httptest.NewRequest(http.MethodGet, target, nil)
				r.Header.Set("EC-Signature", tc.header(secret))
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				require.Equal(t, tc.code, w.Code, w.Body.String())
			})
		}
	}
}

// A signed request is answered once: the same signature again within the
// window is a replay, also with junk entries added to the header; after the
// window it is stale. A fresh signature for the same request passes.
func TestCheckbackHandlerRefusesReplay(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	h := newTestCheckbackHandler(WithSecret("s3cret"), WithCheckbackClock(clock))
	const target = "/a.B/verifyMessage"
	const body = `[1,"c1"]`
	do := func(header string) (int, string) {
		r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("EC-Signature", header)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	sig := signV2ForTest("s3cret", clock(), httptest.NewRequest(http.MethodPost, target, nil), body)
	code, b := do(sig)
	require.Equal(t, 200, code, b)
	code, b = do(sig)
	require.Equal(t, 401, code)
	require.Contains(t, b, "replay")
	code, _ = do(sig + ",v2=00ff,v1=00ff")
	require.Equal(t, 401, code)
	advance(4 * time.Minute)
	code, b = do(sig)
	require.Equal(t, 401, code)
	require.Contains(t, b, "replay")
	advance(2 * time.Minute)
	code, b = do(sig)
	require.Equal(t, 401, code)
	require.Contains(t, b, "outside the allowed window")
	fresh := signV2ForTest("s3cret", clock(), httptest.NewRequest(http.MethodPost, target, nil), body)
	code, b = do(fresh)
	require.Equal(t, 200, code, b)
}

// A signature from more than 30 s ahead is refused; the past window stays
// 5 minutes. Both are settable.
func TestCheckbackHandlerFutureSkew(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	const target = "/cb?bizID=1&messageKey=c1"
	for _, tc := range []struct {
		name string
		at   time.Duration
		opts []CheckbackOption
		code int
	}{
		{"29s ahead", 29 * time.Second, nil, 200},
		{"31s ahead", 31 * time.Second, nil, 401},
		{"2m ahead", 2 * time.Minute, nil, 401},
		{"2m ahead, future skew 3m", 2 * time.Minute, []CheckbackOption{WithSignatureFutureSkew(3 * time.Minute)}, 200},
		{"4m59s behind", -299 * time.Second, nil, 200},
		{"5m01s behind", -301 * time.Second, nil, 401},
		{"8m behind, window 10m", -8 * time.Minute, []CheckbackOption{WithSignatureSkew(10 * time.Minute)}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newTestCheckbackHandler(append([]CheckbackOption{WithSecret("k"), WithCheckbackClock(func() time.Time { return now })}, tc.opts...)...)
			r := httptest.NewRequest(http.MethodGet, target, nil)
			r.Header.Set("EC-Signature", signV2ForTest("k", now.Add(tc.at), r, ""))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			require.Equal(t, tc.code, w.Code, w.Body.String())
		})
	}
}

// The replay cache holds at most its bound; when full it forgets the
// signature nearest its expiry first, and expired ones go before that.
func TestReplayCacheBound(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	c := newReplayCache(3)
	for i := range 10 {
		key := strconv.Itoa(i)
		require.False(t, c.seen(key, now.Add(time.Duration(i)*time.Second+time.Minute), now), key)
		require.LessOrEqual(t, c.len(), 3)
		require.True(t, c.seen(key, now.Add(time.Hour), now), "recorded: %s", key)
	}
	require.Equal(t, 3, c.len())
	require.True(t, c.seen("9", now.Add(time.Hour), now))
	require.True(t, c.seen("7", now.Add(time.Hour), now))
	require.False(t, c.seen("6", now.Add(time.Hour), now), "evicted first: nearest expiry")
	// Everything recorded so far expires before an hour from now.
	later := now.Add(2 * time.Minute)
	require.False(t, c.seen("x", later.Add(time.Minute), later))
	require.LessOrEqual(t, c.len(), 2, "the expired entries were dropped")

	// Through the handler: a bound of 2 holds 2 after many requests.
	h := NewCheckbackHandler(checkbackDecisions, WithSecret("k"), WithReplayCacheSize(2),
		WithCheckbackLogger(slog.New(slog.DiscardHandler)), WithCheckbackClock(func() time.Time { return now }))
	for i := range 20 {
		target := "/cb?bizID=1&messageKey=c" + strconv.Itoa(i)
		r := httptest.NewRequest(http.MethodGet, target, nil)
		r.Header.Set("EC-Signature", signV2ForTest("k", now, r, ""))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, 200, w.Code, w.Body.String())
	}
	require.Equal(t, 2, h.(*checkbackHandler).replays.len())
}

// With the legacy v1 signature accepted, a captured "t,v2,v1" request sent
// again as "t,v1" alone (or with the v2 entry spoiled, or to another Host,
// which v1 does not cover) is a replay: the cache is keyed by the request,
// not by whichever MAC matched.
func TestCheckbackHandlerRefusesDowngradeReplay(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	h := newTestCheckbackHandler(WithSecret("s3cret"), WithLegacySignatureV1(), WithCheckbackClock(func() time.Time { return now }))
	const target = "/cb?bizID=1&messageKey=c1"
	do := func(host, header string) (int, string) {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		if host != "" {
			r.Host = host
		}
		r.Header.Set("EC-Signature", header)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	both := checkback.SignWithV1([]byte("s3cret"), now, checkback.SignedRequest(httptest.NewRequest(http.MethodGet, target, nil), nil))
	ts, rest, _ := strings.Cut(both, ",")
	v2, v1, _ := strings.Cut(rest, ",")
	require.True(t, strings.HasPrefix(v2, "v2=") && strings.HasPrefix(v1, "v1="), both)

	code, b := do("", both)
	require.Equal(t, http.StatusOK, code, b)
	for _, replay := range []struct{ host, header string }{
		{"", ts + "," + v1},
		{"", ts + ",v2=" + strings.Repeat("0", 64) + "," + v1},
		{"", v1 + "," + ts},
		{"other.example:8090", ts + "," + v1},
		{"", both},
	} {
		code, b = do(replay.host, replay.header)
		require.Equal(t, http.StatusUnauthorized, code, "%+v: %s", replay, b)
		require.Contains(t, b, "replay", replay)
	}
	// Two requests v1 cannot tell apart but v2 can (another Triple group,
	// same second, target and body) are both answered.
	for _, group := range []string{"a", "b"} {
		r := httptest.NewRequest(http.MethodPost, "/a.B/verifyMessage", strings.NewReader(`[1,"c3"]`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(checkback.HeaderTriGroup, group)
		r.Header.Set("EC-Signature", checkback.SignWithV1([]byte("s3cret"), now, checkback.SignedRequest(r, []byte(`[1,"c3"]`))))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, http.StatusOK, w.Code, "group %s: %s", group, w.Body.String())
	}
}
