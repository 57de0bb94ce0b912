package admin_test

import (
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
)

// NUL bytes and invalid UTF-8 in filters, path keys and reasons are a 400
// with a plain message, before the store is asked (PostgreSQL refused
// them with its own error: a 500 logged at ERROR).
func TestBadTextIsABadRequest(t *testing.T) {
	t.Parallel()
	// Every store call fails: reaching the store would be a 500.
	h, err := admin.NewHandler(admin.Config{
		Tokens: []admin.Token{{Name: admintest.AdminName, Token: admintest.AdminToken, Scope: admin.ScopeAdmin}},
		Logger: admintest.Quiet,
	}, fakeStore{err: errors.New("ERROR: invalid byte sequence for encoding \"UTF8\": 0x00 (SQLSTATE 22021)")}, newFakeDLQ())
	require.NoError(t, err)
	env := &admintest.Env{Handler: h}
	env.Server = newServer(t, h)
	for _, c := range []call{
		{method: "GET", path: "/api/v1/messages?biz_id=or%00ders"},
		{method: "GET", path: "/api/v1/messages?key=%ff%fe"},
		{method: "GET", path: "/api/v1/messages?ke%00y=1"},
		{method: "GET", path: "/api/v1/messages/orders/a%00b"},
		{method: "GET", path: "/api/v1/messages/or%c3ders/k"},
		{method: "GET", path: "/api/v1/messages/orders?key=%00"},
		{method: "GET", path: "/api/v1/audit?biz_id=%00"},
		{method: "POST", path: "/api/v1/messages/orders/a%00b/retry", body: reason("r")},
		{method: "POST", path: adminapi.ActionPath("orders", "k", "retry"), body: reason("bad \x00 reason")},
		{method: "POST", path: adminapi.BizRetryPath("orders"), body: reason("bad \x00 reason")},
		{method: "POST", path: adminapi.DLQReplayPath(0, 3), body: map[string]string{"reason": "fixed", "topic": "a\x00b"}},
	} {
		c.token = admintest.AdminToken
		a := do(t, env, c)
		require.Equal(t, http.StatusBadRequest, a.code, "%s %s: %s", c.method, c.path, a.body)
		msg := a.err(t)
		require.NotContains(t, msg, "SQLSTATE", c.path)
		require.Regexp(t, `NUL byte|UTF-8|topic`, msg, c.path)
	}

	// The console.
	b := newBrowser(t, env)
	b.login(admintest.AdminToken)
	for _, path := range []string{"/ui/messages?key=%00", "/ui/messages?biz_id=%ff", "/ui/m/orders/a%00b", "/ui/?key=%00", "/ui/m/or%ffders/k"} {
		p := b.get(path)
		require.Equal(t, http.StatusBadRequest, p.code, "%s: %s", path, p.body)
		require.Contains(t, p.body, "NUL byte or invalid UTF-8", path)
		require.NotContains(t, p.body, "SQLSTATE", path)
	}
	// A login's "next" with a NUL byte goes to the console's start.
	p := newBrowser(t, env).post("/ui/login", url.Values{"token": {admintest.AdminToken}, "next": {"/ui/\x00x"}})
	require.Equal(t, http.StatusSeeOther, p.code)
	require.Equal(t, "/ui/", p.loc)

	p = b.get("/ui/dlq")
	require.Equal(t, http.StatusOK, p.code)
	p = b.post(uiActionPath("orders", "k", "retry"), url.Values{"csrf": {csrf(t, p)}, "reason": {"a\x00b"}})
	require.Equal(t, http.StatusBadRequest, p.code, p.body)
	require.Contains(t, p.body, "NUL byte")
}

func uiActionPath(biz, key, action string) string {
	return "/ui/m/" + url.PathEscape(biz) + "/" + url.PathEscape(key) + "/" + action
}
