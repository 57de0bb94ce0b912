package admin_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

type newEnv func(t *testing.T, dlq admin.DLQ, opts ...func(*admin.Config)) *admintest.Env

// eachStore runs f on the SQLite store and on PostgreSQL (which skips
// without EVENTCENTER_TEST_POSTGRES).
func eachStore(t *testing.T, f func(t *testing.T, newEnv newEnv)) {
	for _, s := range []struct {
		name string
		new  newEnv
	}{{"sqlite", admintest.New}, {"postgres", admintest.NewPostgres}} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			f(t, s.new)
		})
	}
}

type call struct {
	method, path, token string
	body                any
	contentType         string
}

type answer struct {
	code int
	hdr  http.Header
	body []byte
}

func (a answer) err(t *testing.T) string {
	t.Helper()
	var e adminapi.Error
	require.NoError(t, json.Unmarshal(a.body, &e), string(a.body))
	return e.Error
}

func do(t *testing.T, env *admintest.Env, c call) answer {
	t.Helper()
	var body io.Reader
	if c.body != nil {
		switch b := c.body.(type) {
		case string:
			body = strings.NewReader(b)
		default:
			j, err := json.Marshal(b)
			require.NoError(t, err)
			body = bytes.NewReader(j)
		}
	}
	req, err := http.NewRequestWithContext(t.Context(), c.method, env.Server.URL+c.path, body)
	require.NoError(t, err)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.body != nil {
		ct := c.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{resp.StatusCode, resp.Header, b}
}

func decode[T any](t *testing.T, a answer, code int) T {
	t.Helper()
	require.Equal(t, code, a.code, string(a.body))
	require.Equal(t, "application/json", a.hdr.Get("Content-Type"))
	var v T
	require.NoError(t, json.Unmarshal(a.body, &v), string(a.body))
	return v
}

func get(t *testing.T, env *admintest.Env, path string) answer {
	return do(t, env, call{method: "GET", path: path, token: admintest.ReadToken})
}

func post(t *testing.T, env *admintest.Env, path string, body any) answer {
	return do(t, env, call{method: "POST", path: path, token: admintest.AdminToken, body: body})
}

func keys(ms []adminapi.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.BizID+":"+m.Key)
	}
	return out
}

func TestList(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		list := func(q string) []string {
			t.Helper()
			l := decode[adminapi.MessageList](t, get(t, env, "/api/v1/messages?"+q), http.StatusOK)
			return keys(l.Messages)
		}
		require.Len(t, list(""), 7)
		require.Equal(t, []string{"orders:" + admintest.KeyVF}, list("status=VERIFY_FAILED"))
		require.Equal(t, []string{"orders:" + admintest.KeyVF}, list("status=4"))
		require.Equal(t, []string{"pay:" + admintest.KeyDead}, list("send_status=dead&status=COMMITTED"))
		require.ElementsMatch(t, []string{"pay:p-dead", "pay:p-rb", "pay:p-bin"}, list("biz_id=pay"))
		require.Equal(t, []string{"orders:" + admintest.KeyVF}, list("key="+url.QueryEscape(":1/")))
		// PREPARED and older than 2 minutes: o-1 and p-bin, not o-2.
		require.ElementsMatch(t, []string{"orders:o-1", "pay:p-bin"}, list("status=PREPARED&older_than=2m"))

		// Paging with limit and cursor covers everything once.
		var all []string
		cursor := ""
		for range 10 {
			l := decode[adminapi.MessageList](t, get(t, env, "/api/v1/messages?limit=3&cursor="+url.QueryEscape(cursor)), http.StatusOK)
			require.LessOrEqual(t, len(l.Messages), 3)
			all = append(all, keys(l.Messages)...)
			if cursor = l.Next; cursor == "" {
				break
			}
		}
		require.Len(t, all, 7)
		require.ElementsMatch(t, list("limit=100"), all)

		// What one listed message looks like.
		l := decode[adminapi.MessageList](t, get(t, env, "/api/v1/messages?status=COMMITTED&send_status=SENT"), http.StatusOK)
		require.Len(t, l.Messages, 1)
		m := l.Messages[0]
		require.Equal(t, "orders:o-sent", m.ID)
		require.Equal(t, "COMMITTED", m.Status)
		require.Equal(t, "SENT", m.SendStatus)
		require.Equal(t, "orders-events/0@7", m.SendRef)
		require.NotNil(t, m.SentAt)
		require.Equal(t, len(`{"order":"sent"}`), m.PayloadSize)
	})
}

func TestListBadParameters(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		for q, want := range map[string]string{
			"status=DONE":        "status",
			"send_status=LOST":   "send_status",
			"older_than=soon":    "older_than",
			"older_than=-5m":     "older_than",
			"limit=0":            "limit",
			"limit=abc":          "limit",
			"limit=100000":       "limit",
			"stauts=PREPARED":    "unknown query parameter \"stauts\"",
			"cursor=not-a-thing": "cursor",
		} {
			a := get(t, env, "/api/v1/messages?"+q)
			require.Equal(t, http.StatusBadRequest, a.code, q)
			require.Contains(t, a.err(t), want, q)
		}
	})
}

func TestGet(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		// The key has ':' and '/': escaped as one segment, and also raw.
		for _, path := range []string{
			adminapi.MessagePath(admintest.Biz, admintest.KeyVF),
			"/api/v1/messages/orders/vf:1/x",
		} {
			d := decode[adminapi.MessageDetail](t, get(t, env, path), http.StatusOK)
			require.Equal(t, admintest.KeyVF, d.Key, path)
			require.Equal(t, "VERIFY_FAILED", d.Status)
			require.Equal(t, admintest.ParkReason, d.LastError)
			require.Equal(t, "http://producer.example/check", d.Verify)
			require.Equal(t, "orders-events", d.Topic)
			require.Equal(t, "fk-"+admintest.KeyVF, d.ForwardKey)
			require.NotNil(t, d.PayloadText)
			require.Equal(t, `{"order":"vf"}`, *d.PayloadText)
			require.Equal(t, base64.StdEncoding.EncodeToString([]byte(`{"order":"vf"}`)), d.PayloadBase64)
			require.Equal(t, []string{"resolve", "retry", "cancel"}, d.Actions)
			require.Empty(t, d.Audit)
			require.NotNil(t, d.CreatedAt)
			require.Equal(t, env.Clock.Now().Add(-20*time.Minute), *d.CreatedAt)
			require.Len(t, d.Headers, 2)
			require.Equal(t, "trace", d.Headers[0].Key)
			require.Equal(t, "t-"+admintest.KeyVF, *d.Headers[0].Value)
			require.Nil(t, d.Headers[1].Value, "binary header has no text")
			require.Equal(t, base64.StdEncoding.EncodeToString([]byte{0xff, 0}), d.Headers[1].ValueBase64)
		}
		// A binary payload has no text form.
		d := decode[adminapi.MessageDetail](t, get(t, env, adminapi.MessagePath(admintest.Biz2, admintest.KeyBinary)), http.StatusOK)
		require.Nil(t, d.PayloadText)
		require.Equal(t, base64.StdEncoding.EncodeToString([]byte{0xde, 0xad, 0xbe, 0xef}), d.PayloadBase64)

		a := get(t, env, adminapi.MessagePath("orders", "nope"))
		require.Equal(t, http.StatusNotFound, a.code)
		require.Equal(t, "message not found: orders:nope", a.err(t))
		a = get(t, env, adminapi.MessagePath("or:ders", "k"))
		require.Equal(t, http.StatusBadRequest, a.code)
		require.Contains(t, a.err(t), "bizID")
		a = get(t, env, "/api/v1/nothing")
		require.Equal(t, http.StatusNotFound, a.code)
		require.Contains(t, a.err(t), "no such endpoint")
	})
}

func TestCounts(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		c := decode[adminapi.Counts](t, get(t, env, "/api/v1/counts"), http.StatusOK)
		require.Equal(t, int64(7), c.Total)
		require.Equal(t, map[string]int64{"PREPARED": 3, "VERIFY_FAILED": 1, "COMMITTED/SENT": 1, "COMMITTED/DEAD": 1, "ROLLED_BACK": 1}, c.ByStatus)
		require.Equal(t, map[string]int64{"PREPARED": 2, "VERIFY_FAILED": 1, "COMMITTED/SENT": 1}, c.ByBizID["orders"])
		require.Equal(t, map[string]int64{"PREPARED": 1, "COMMITTED/DEAD": 1, "ROLLED_BACK": 1}, c.ByBizID["pay"])
		require.Equal(t, env.Clock.Now().Add(-10*time.Minute), c.OldestPrepared["orders"])
		require.Equal(t, env.Clock.Now().Add(-5*time.Minute), c.OldestPrepared["pay"])
		require.Contains(t, get(t, env, "/api/v1/counts?x=1").err(t), "unknown query parameter")
	})
}

func reason(r string) map[string]string { return map[string]string{"reason": r} }

func TestResolve(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		path := adminapi.ActionPath(admintest.Biz, admintest.KeyVF, "resolve")
		res := decode[adminapi.ActionResult](t, post(t, env, path, adminapi.ActionRequest{Decision: "commit", Reason: "producer confirmed order vf is paid"}), http.StatusOK)
		require.Equal(t, "resolve_commit", res.Action)
		require.Equal(t, "applied", res.Effect)
		require.True(t, res.HandedOff)
		require.Equal(t, "COMMITTED", res.Message.Status)
		require.Equal(t, "PENDING", res.Message.SendStatus)
		require.Empty(t, res.Message.LastError)
		require.Equal(t, []adminapi.AuditEntry{{
			Action: "resolve_commit", Who: admintest.AdminName, Reason: "producer confirmed order vf is paid",
			At: env.Clock.Now(), Before: "VERIFY_FAILED", After: "COMMITTED",
		}}, res.Message.Audit)

		// The forwarder got it at once.
		handed := env.Handoff.Messages()
		require.Len(t, handed, 1)
		require.Equal(t, admintest.KeyVF, handed[0].Key)
		require.True(t, handed[0].Sendable())

		// The audit is in the store, and GET shows it.
		audit, err := env.Store.Audit(t.Context(), admintest.Biz, admintest.KeyVF)
		require.NoError(t, err)
		require.Len(t, audit, 1)
		require.Equal(t, admintest.AdminName, audit[0].Who)
		d := decode[adminapi.MessageDetail](t, get(t, env, adminapi.MessagePath(admintest.Biz, admintest.KeyVF)), http.StatusOK)
		require.Len(t, d.Audit, 1)

		// Again: the state no longer allows it.
		a := post(t, env, path, adminapi.ActionRequest{Decision: "rollback", Reason: "oops"})
		require.Equal(t, http.StatusConflict, a.code)
		require.Contains(t, a.err(t), "cannot resolve as rollback a COMMITTED message")
		require.Len(t, env.Handoff.Messages(), 1)

		// Rollback of a PREPARED message: nothing to forward.
		res = decode[adminapi.ActionResult](t, post(t, env, adminapi.ActionPath(admintest.Biz, admintest.KeyStuck, "resolve"),
			adminapi.ActionRequest{Decision: "ROLLBACK", Reason: "order cancelled"}), http.StatusOK)
		require.Equal(t, "resolve_rollback", res.Action)
		require.Equal(t, "ROLLED_BACK", res.Message.Status)
		require.False(t, res.HandedOff)
		require.Len(t, env.Handoff.Messages(), 1)

		// Unknown message.
		a = post(t, env, adminapi.ActionPath(admintest.Biz, "ghost", "resolve"), adminapi.ActionRequest{Decision: "commit", Reason: "x"})
		require.Equal(t, http.StatusNotFound, a.code, string(a.body))
		require.Equal(t, "message not found: orders:ghost", a.err(t))
	})
}

func TestActionBadRequests(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		resolve := adminapi.ActionPath(admintest.Biz, admintest.KeyStuck, "resolve")
		for name, c := range map[string]struct {
			path string
			body any
			ct   string
			code int
			want string
		}{
			"no reason":         {resolve, adminapi.ActionRequest{Decision: "commit"}, "", 400, "reason: required"},
			"blank reason":      {resolve, adminapi.ActionRequest{Decision: "commit", Reason: "  "}, "", 400, "reason: required"},
			"long reason":       {resolve, adminapi.ActionRequest{Decision: "commit", Reason: strings.Repeat("x", 1001)}, "", 400, "reason: longer"},
			"no decision":       {resolve, reason("r"), "", 400, "decision: required"},
			"bad decision":      {resolve, adminapi.ActionRequest{Decision: "maybe", Reason: "r"}, "", 400, `decision: "maybe"`},
			"decision on retry": {adminapi.ActionPath(admintest.Biz, admintest.KeyStuck, "retry"), adminapi.ActionRequest{Decision: "commit", Reason: "r"}, "", 400, "only for resolve"},
			"bad json":          {resolve, "{", "", 400, "request body"},
			"unknown field":     {resolve, `{"reason":"r","decison":"commit"}`, "", 400, "unknown field"}, //nolint:misspell // the misspelt field is the test
			"form body":         {resolve, "reason=r", "application/x-www-form-urlencoded", 415, "want application/json"},
			"unknown action":    {adminapi.ActionPath(admintest.Biz, admintest.KeyStuck, "explode"), reason("r"), "", 404, "unknown action"},
			"no key":            {"/api/v1/messages/orders/resolve", reason("r"), "", 404, "no such endpoint"},
			"bad bizID":         {adminapi.BizRetryPath("a:b"), reason("r"), "", 400, "bizID"},
			"bulk no reason":    {adminapi.BizRetryPath("orders"), reason(""), "", 400, "reason: required"},
		} {
			a := do(t, env, call{method: "POST", path: c.path, token: admintest.AdminToken, body: c.body, contentType: c.ct})
			require.Equal(t, c.code, a.code, name+": "+string(a.body))
			require.Contains(t, a.err(t), c.want, name)
		}
		requireUnchanged(t, env)
	})
}

// requireUnchanged checks that no action reached the store or the forwarder.
func requireUnchanged(t *testing.T, env *admintest.Env) {
	t.Helper()
	for _, k := range []struct{ biz, key, status string }{
		{admintest.Biz, admintest.KeyStuck, "PREPARED"},
		{admintest.Biz, admintest.KeyVF, "VERIFY_FAILED"},
		{admintest.Biz2, admintest.KeyDead, "COMMITTED"},
	} {
		m, err := env.Store.Get(t.Context(), k.biz, k.key)
		require.NoError(t, err)
		require.Equal(t, k.status, m.Status.String())
		audit, err := env.Store.Audit(t.Context(), k.biz, k.key)
		require.NoError(t, err)
		require.Empty(t, audit, k.key)
	}
	require.Empty(t, env.Handoff.Messages())
}

func TestRedeliver(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		res := decode[adminapi.ActionResult](t, post(t, env, adminapi.ActionPath(admintest.Biz2, admintest.KeyDead, "redeliver"), reason("topic created")), http.StatusOK)
		require.Equal(t, "redeliver", res.Action)
		require.Equal(t, "PENDING", res.Message.SendStatus)
		require.Equal(t, 0, res.Message.SendAttempts)
		require.True(t, res.HandedOff)
		require.Equal(t, "topic created", res.Message.Audit[0].Reason)
		require.Len(t, env.Handoff.Messages(), 1)

		// A sent message may be redelivered too (a consumer lost it).
		decode[adminapi.ActionResult](t, post(t, env, adminapi.ActionPath(admintest.Biz, admintest.KeySent, "redeliver"), reason("consumer lost it")), http.StatusOK)
		require.Len(t, env.Handoff.Messages(), 2)

		a := post(t, env, adminapi.ActionPath(admintest.Biz, admintest.KeyStuck, "redeliver"), reason("x"))
		require.Equal(t, http.StatusConflict, a.code)
		require.Contains(t, a.err(t), "cannot redeliver a PREPARED message")
	})
}

func TestRetry(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		res := decode[adminapi.ActionResult](t, post(t, env, adminapi.ActionPath(admintest.Biz, admintest.KeyVF, "retry"), reason("endpoint fixed")), http.StatusOK)
		require.Equal(t, "retry_now", res.Action)
		require.Equal(t, "PREPARED", res.Message.Status)
		require.Equal(t, 0, res.Message.VerifyAttempts)
		require.NotNil(t, res.Message.VerifyNextAt)
		require.Equal(t, env.Clock.Now(), *res.Message.VerifyNextAt)
		require.False(t, res.HandedOff, "a check-back is not a send")

		res = decode[adminapi.ActionResult](t, post(t, env, adminapi.ActionPath(admintest.Biz2, admintest.KeyDead, "retry"), reason("broker back")), http.StatusOK)
		require.True(t, res.HandedOff)

		a := post(t, env, adminapi.ActionPath(admintest.Biz2, admintest.KeyRB, "retry"), reason("x"))
		require.Equal(t, http.StatusConflict, a.code)
		require.Contains(t, a.err(t), "cannot retry a ROLLED_BACK message")
	})
}

func TestBizRetry(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		res := decode[adminapi.BulkRetryResult](t, post(t, env, adminapi.BizRetryPath(admintest.Biz), reason("producer outage over")), http.StatusOK)
		// o-1, o-2 (PREPARED) and vf (VERIFY_FAILED); o-sent is done.
		require.Equal(t, adminapi.BulkRetryResult{BizID: "orders", Reset: 3}, res)
		audit, err := env.Store.Audit(t.Context(), admintest.Biz, admintest.KeyVF)
		require.NoError(t, err)
		require.Len(t, audit, 1)
		require.Equal(t, store.AuditEntry{BizID: "orders", Key: admintest.KeyVF, Action: "retry_now", Who: admintest.AdminName,
			Reason: "producer outage over", At: audit[0].At, Before: "VERIFY_FAILED", After: "PREPARED"}, audit[0])
		m, err := env.Store.Get(t.Context(), admintest.Biz, admintest.KeyVF)
		require.NoError(t, err)
		require.Equal(t, state.Prepared, m.Status)

		res = decode[adminapi.BulkRetryResult](t, post(t, env, adminapi.BizRetryPath("nobody"), reason("x")), http.StatusOK)
		require.Equal(t, 0, res.Reset)
	})
}

func TestAuth(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		resolve := adminapi.ActionPath(admintest.Biz, admintest.KeyVF, "resolve")
		body := adminapi.ActionRequest{Decision: "commit", Reason: "r"}
		for name, c := range map[string]struct {
			c    call
			code int
			want string
		}{
			"no token":          {call{method: "GET", path: "/api/v1/messages"}, 401, "missing bearer token"},
			"wrong token":       {call{method: "GET", path: "/api/v1/counts", token: "read-token-0123456780"}, 401, "invalid token"},
			"prefix of token":   {call{method: "GET", path: "/api/v1/counts", token: "read-token"}, 401, "invalid token"},
			"no token, action":  {call{method: "POST", path: resolve, body: body}, 401, "missing bearer token"},
			"bad token, action": {call{method: "POST", path: resolve, token: "nope-nope-nope-nope", body: body}, 401, "invalid token"},
			"read on resolve":   {call{method: "POST", path: resolve, token: admintest.ReadToken, body: body}, 403, `scope "read"`},
			"read on redeliver": {call{method: "POST", path: adminapi.ActionPath(admintest.Biz2, admintest.KeyDead, "redeliver"), token: admintest.ReadToken, body: reason("r")}, 403, "needs scope"},
			"read on retry":     {call{method: "POST", path: adminapi.ActionPath(admintest.Biz, admintest.KeyStuck, "retry"), token: admintest.ReadToken, body: reason("r")}, 403, "needs scope"},
			"read on bulk":      {call{method: "POST", path: adminapi.BizRetryPath("orders"), token: admintest.ReadToken, body: reason("r")}, 403, "needs scope"},
			"read on replay":    {call{method: "POST", path: adminapi.DLQReplayPath(0, 1), token: admintest.ReadToken}, 403, "needs scope"},
			"basic auth":        {call{method: "GET", path: "/api/v1/messages", token: ""}, 401, "missing bearer token"},
		} {
			a := do(t, env, c.c)
			require.Equal(t, c.code, a.code, name)
			require.Contains(t, a.err(t), c.want, name)
			if c.code == 401 {
				require.Contains(t, a.hdr.Get("WWW-Authenticate"), "Bearer", name)
			}
		}
		// A scheme other than Bearer.
		req, err := http.NewRequestWithContext(t.Context(), "GET", env.Server.URL+"/api/v1/counts", nil)
		require.NoError(t, err)
		req.SetBasicAuth("alice", admintest.AdminToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

		requireUnchanged(t, env)

		// The read token may read.
		require.Equal(t, http.StatusOK, get(t, env, "/api/v1/counts").code)
	})
}

func TestNoTokens(t *testing.T) {
	t.Parallel()
	closed := admintest.New(t, nil, func(c *admin.Config) { c.Tokens = nil })
	a := do(t, closed, call{method: "GET", path: "/api/v1/counts", token: admintest.AdminToken})
	require.Equal(t, http.StatusUnauthorized, a.code)
	require.Contains(t, a.err(t), "no admin tokens are configured")
	require.NotEmpty(t, a.hdr.Get("WWW-Authenticate"))
	a = do(t, closed, call{method: "POST", path: adminapi.ActionPath(admintest.Biz, admintest.KeyVF, "retry"), body: reason("r")})
	require.Equal(t, http.StatusUnauthorized, a.code)
	requireUnchanged(t, closed)

	open := admintest.New(t, nil, func(c *admin.Config) { c.Tokens, c.Insecure = nil, true })
	require.Equal(t, http.StatusOK, do(t, open, call{method: "GET", path: "/api/v1/counts"}).code)
	res := decode[adminapi.ActionResult](t, do(t, open, call{method: "POST", path: adminapi.ActionPath(admintest.Biz, admintest.KeyVF, "retry"), body: reason("dev")}), http.StatusOK)
	require.Equal(t, "anonymous", res.Message.Audit[0].Who)

	// Insecure does not open a handler that has tokens.
	withTokens := admintest.New(t, nil, func(c *admin.Config) { c.Insecure = true })
	require.Equal(t, http.StatusUnauthorized, do(t, withTokens, call{method: "GET", path: "/api/v1/counts"}).code)
}

func TestCrossOriginRefused(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil, func(c *admin.Config) { c.Tokens, c.Insecure = nil, true })
	req, err := http.NewRequestWithContext(t.Context(), "POST", env.Server.URL+adminapi.ActionPath(admintest.Biz, admintest.KeyVF, "retry"), strings.NewReader(`{"reason":"x"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	requireUnchanged(t, env)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		cfg  admin.Config
		want string
	}{
		"empty name":  {admin.Config{Tokens: []admin.Token{{Token: "0123456789abcdef", Scope: "read"}}}, "Tokens[0].Name"},
		"short token": {admin.Config{Tokens: []admin.Token{{Name: "a", Token: "short", Scope: "read"}}}, "Tokens[0].Token"},
		"bad scope":   {admin.Config{Tokens: []admin.Token{{Name: "a", Token: "0123456789abcdef", Scope: "root"}}}, "Tokens[0].Scope"},
		"dup name": {admin.Config{Tokens: []admin.Token{{Name: "a", Token: "0123456789abcdef", Scope: "read"},
			{Name: "a", Token: "0123456789abcdeX", Scope: "read"}}}, "Tokens[1].Name"},
		"dup token": {admin.Config{Tokens: []admin.Token{{Name: "a", Token: "0123456789abcdef", Scope: "read"},
			{Name: "b", Token: "0123456789abcdef", Scope: "admin"}}}, "Tokens[1].Token"},
		"limits": {admin.Config{DefaultLimit: 10, MaxLimit: 5}, "DefaultLimit"},
	} {
		require.ErrorContains(t, c.cfg.Validate(), c.want, name)
		_, err := admin.NewHandler(c.cfg, fakeStore{}, nil)
		require.ErrorContains(t, err, c.want, name)
	}
	_, err := admin.NewHandler(admin.Config{}, nil, nil)
	require.ErrorContains(t, err, "nil store")
}

// fakeStore fails every call (store outage).
type fakeStore struct{ err error }

func (f fakeStore) Apply(context.Context, store.ApplyRequest) (store.ApplyResult, error) {
	return store.ApplyResult{}, f.err
}
func (f fakeStore) Get(context.Context, string, string) (state.Message, error) {
	return state.Message{}, f.err
}
func (f fakeStore) List(context.Context, store.Filter) (store.Page, error) {
	return store.Page{}, f.err
}
func (f fakeStore) Counts(context.Context) ([]store.Count, error) { return nil, f.err }
func (f fakeStore) OldestPrepared(context.Context) (map[string]time.Time, error) {
	return nil, f.err
}
func (f fakeStore) Audit(context.Context, string, string) ([]store.AuditEntry, error) {
	return nil, f.err
}
func (f fakeStore) RetryNowBizID(context.Context, string, store.Actor) (int, error) { return 0, f.err }
func (f fakeStore) AddAudit(context.Context, store.AuditEntry) error                { return f.err }
func (f fakeStore) AuditLog(context.Context, store.AuditQuery) ([]store.AuditEntry, error) {
	return nil, f.err
}

func TestStoreFailure(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h, err := admin.NewHandler(admin.Config{Insecure: true, Logger: admintest.Quiet, Registerer: reg}, fakeStore{err: errors.New("database is locked")}, nil)
	require.NoError(t, err)
	env := &admintest.Env{Handler: h}
	env.Server = newServer(t, h)
	for _, c := range []call{
		{method: "GET", path: "/api/v1/messages"},
		{method: "GET", path: "/api/v1/counts"},
		{method: "GET", path: adminapi.MessagePath("b", "k")},
		{method: "POST", path: adminapi.ActionPath("b", "k", "retry"), body: reason("r")},
		{method: "POST", path: adminapi.BizRetryPath("b"), body: reason("r")},
		{method: "GET", path: adminapi.Prefix + "/audit"},
	} {
		a := do(t, env, c)
		require.Equal(t, http.StatusInternalServerError, a.code, c.path)
		require.Contains(t, a.err(t), "database is locked", c.path)
	}
	h, err = admin.NewHandler(admin.Config{Insecure: true, Logger: admintest.Quiet}, fakeStore{err: context.DeadlineExceeded}, nil)
	require.NoError(t, err)
	env.Server = newServer(t, h)
	require.Equal(t, http.StatusServiceUnavailable, do(t, env, call{method: "GET", path: "/api/v1/counts"}).code)
	require.Equal(t, 1.0, counterValue(t, reg, "retry_now", "error"))
}

func counterValue(t *testing.T, reg *prometheus.Registry, action, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "eventcenter_admin_actions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["action"] == action && l["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no eventcenter_admin_actions_total{action=%q,result=%q}", action, result)
	return 0
}
