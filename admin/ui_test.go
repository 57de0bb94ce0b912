package admin_test

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// browser is an HTTP client with cookies that does not follow redirects.
type browser struct {
	t   *testing.T
	env *admintest.Env
	hc  *http.Client
	// hdr is added to every request.
	hdr http.Header
}

func newBrowser(t *testing.T, env *admintest.Env) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, env: env, hdr: http.Header{}, hc: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type page struct {
	code int
	loc  string
	hdr  http.Header
	body string
}

func (b *browser) do(method, path string, form url.Values) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(b.t.Context(), method, b.env.Server.URL+path, body)
	require.NoError(b.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range b.hdr {
		req.Header[k] = v
	}
	resp, err := b.hc.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	bs, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return page{resp.StatusCode, resp.Header.Get("Location"), resp.Header, string(bs)}
}

func (b *browser) get(path string) page { return b.do("GET", path, nil) }

func (b *browser) post(path string, form url.Values) page { return b.do("POST", path, form) }

func (b *browser) login(token string) {
	b.t.Helper()
	p := b.post("/ui/login", url.Values{"token": {token}, "next": {"/ui/messages"}})
	require.Equal(b.t, http.StatusSeeOther, p.code, p.body)
	require.Equal(b.t, "/ui/messages", p.loc)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrf(t *testing.T, p page) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	require.NotNil(t, m, "no form token in page")
	return m[1]
}

func detailPath(biz, key string) string {
	return "/ui/m/" + url.PathEscape(biz) + "/" + url.PathEscape(key)
}

func TestUILogin(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	b := newBrowser(t, env)

	p := b.get("/ui/")
	require.Equal(t, http.StatusSeeOther, p.code)
	require.Equal(t, "/ui/login?next=%2Fui%2F", p.loc)
	p = b.get("/ui")
	require.Equal(t, http.StatusSeeOther, p.code)

	p = b.get("/ui/login")
	require.Equal(t, http.StatusOK, p.code)
	require.Contains(t, p.body, `name="token"`)
	require.Contains(t, p.hdr.Get("Content-Security-Policy"), "default-src 'none'")

	p = b.post("/ui/login", url.Values{"token": {"not-a-token-at-all"}})
	require.Equal(t, http.StatusUnauthorized, p.code)
	require.Contains(t, p.body, "invalid token")

	// An open redirect is not possible after login.
	p = b.post("/ui/login", url.Values{"token": {admintest.ReadToken}, "next": {"//evil.example/x"}})
	require.Equal(t, http.StatusSeeOther, p.code)
	require.Equal(t, "/ui/", p.loc)
	var cookie string
	for _, c := range p.hdr.Values("Set-Cookie") {
		if strings.HasPrefix(c, "ec_admin_session=") {
			cookie = c
		}
	}
	require.Contains(t, cookie, "HttpOnly")
	require.Contains(t, cookie, "SameSite=Strict")
	require.Contains(t, cookie, "Path=/ui")
	require.NotContains(t, cookie, admintest.ReadToken, "the cookie does not carry the token")

	p = b.get("/ui/")
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Contains(t, p.body, admintest.ReadName+" · read")

	// Log out: the session is gone.
	p = b.post("/ui/logout", url.Values{"csrf": {csrf(t, p)}})
	require.Equal(t, http.StatusSeeOther, p.code)
	require.Equal(t, http.StatusSeeOther, b.get("/ui/").code)
}

// Logging out ends the session on the server: the old cookie, sent again
// (copied, or from another tab), is refused; it used to stay valid until
// its expiry.
func TestUILogoutRevokesTheCookie(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	b := newBrowser(t, env)
	b.login(admintest.AdminToken)
	u, err := url.Parse(env.Server.URL + "/ui/")
	require.NoError(t, err)
	old := b.hc.Jar.Cookies(u)
	require.Len(t, old, 1)
	p := b.get("/ui/")
	require.Equal(t, http.StatusOK, p.code)

	// Another browser logged in with the same token.
	b2 := newBrowser(t, env)
	b2.login(admintest.AdminToken)

	p = b.post("/ui/logout", url.Values{"csrf": {csrf(t, p)}})
	require.Equal(t, http.StatusSeeOther, p.code)

	replay := newBrowser(t, env)
	replay.hc.Jar.SetCookies(u, old)
	p = replay.get("/ui/")
	require.Equal(t, http.StatusSeeOther, p.code, "the cookie from before the logout is refused")
	require.Contains(t, p.loc, "/ui/login")
	p = replay.post("/ui/bizids/orders/retry", url.Values{"reason": {"x"}})
	require.Equal(t, http.StatusUnauthorized, p.code)
	require.Equal(t, http.StatusSeeOther, b2.get("/ui/").code, "sessions are per token")

	// A new login works.
	b.login(admintest.AdminToken)
	require.Equal(t, http.StatusOK, b.get("/ui/").code)
}

func TestUISessionExpiresAndCannotBeForged(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil, func(c *admin.Config) { c.SessionTTL = time.Hour })
	b := newBrowser(t, env)
	b.login(admintest.ReadToken)
	require.Equal(t, http.StatusOK, b.get("/ui/").code)

	// A cookie naming the admin with a made-up signature is refused.
	u, err := url.Parse(env.Server.URL + "/ui/")
	require.NoError(t, err)
	cs := b.hc.Jar.Cookies(u)
	require.Len(t, cs, 1)
	parts := strings.Split(cs[0].Value, ".")
	forged := *cs[0]
	forged.Value = "YWxpY2U." + parts[1] + "." + parts[2] // "alice" with viewer's signature
	b2 := newBrowser(t, env)
	b2.hc.Jar.SetCookies(u, []*http.Cookie{&forged})
	require.Equal(t, http.StatusSeeOther, b2.get("/ui/").code)

	env.Clock.Advance(time.Hour + time.Second)
	require.Equal(t, http.StatusSeeOther, b.get("/ui/").code)
}

func TestUIOverview(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil, func(c *admin.Config) { c.StuckAfter = 3 * time.Minute })
	b := newBrowser(t, env)
	b.login(admintest.AdminToken)
	p := b.get("/ui/")
	require.Equal(t, http.StatusOK, p.code)
	body := html.UnescapeString(p.body)
	// Counts per bizID.
	require.Regexp(t, `(?s)<td class="mono"><a href="/ui/messages\?biz_id=orders">orders</a></td>.*?>2</td>.*?hot">1</td>`, body)
	// The stuck lists: VERIFY_FAILED, DEAD, PREPARED for more than 3m (o-1
	// and p-bin, not the fresh o-2).
	require.Contains(t, body, `href="/ui/m/orders/vf:1%2Fx"`)
	require.Contains(t, body, `href="/ui/m/pay/p-dead"`)
	require.Contains(t, body, `href="/ui/m/orders/o-1"`)
	require.Contains(t, body, `href="/ui/m/pay/p-bin"`)
	require.NotContains(t, body, `href="/ui/m/orders/o-2"`)
	require.NotContains(t, body, `href="/ui/m/orders/o-sent"`)
	require.Contains(t, body, admintest.ParkReason)
	// The oldest PREPARED of each bizID is linked from the counts.
	require.Contains(t, body, `<a class="oldest" href="/ui/m/orders/o-1" title="o-1, created 2026-03-04 04:56:07Z">10m ago</a>`)
	require.Contains(t, body, `<a class="oldest" href="/ui/m/pay/p-bin"`)

	// Search by key substring and bizID.
	body = html.UnescapeString(b.get("/ui/?key=vf").body)
	require.Contains(t, body, `href="/ui/m/orders/vf:1%2Fx"`)
	require.NotContains(t, body, `href="/ui/m/pay/p-dead"`)
	body = html.UnescapeString(b.get("/ui/?biz_id=pay").body)
	require.NotContains(t, body, `href="/ui/m/orders/vf:1%2Fx"`)
	require.Contains(t, body, `href="/ui/m/pay/p-dead"`)

	// The message list with filters and paging.
	p = b.get("/ui/messages?status=PREPARED&limit=2")
	require.Equal(t, http.StatusOK, p.code)
	require.Contains(t, p.body, "Next page")
	p = b.get("/ui/messages?status=NOPE")
	require.Equal(t, http.StatusBadRequest, p.code)
	require.Contains(t, p.body, "status")
	require.Equal(t, http.StatusNotFound, b.get("/ui/nothing").code)
}

func TestUIMessageAndResolve(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	b := newBrowser(t, env)
	b.login(admintest.AdminToken)
	path := detailPath(admintest.Biz, admintest.KeyVF)
	p := b.get(path)
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Contains(t, p.body, `id="resolve-form"`)
	require.Contains(t, p.body, `id="retry-form"`)
	require.NotContains(t, p.body, `id="redeliver-form"`)
	require.Contains(t, p.body, "{&#34;order&#34;:&#34;vf&#34;}")
	tok := csrf(t, p)

	// Without a reason: 400, shown on the page; nothing changes.
	p = b.post(path+"/resolve", url.Values{"csrf": {tok}, "decision": {"commit"}})
	require.Equal(t, http.StatusBadRequest, p.code)
	require.Contains(t, p.body, "reason: required")
	require.Empty(t, env.Handoff.Messages())

	p = b.post(path+"/resolve", url.Values{"csrf": {tok}, "decision": {"commit"}, "reason": {"shop confirmed"}})
	require.Equal(t, http.StatusSeeOther, p.code, p.body)
	require.Equal(t, path+"?done=resolve_commit&handed_off=1", p.loc)
	require.Len(t, env.Handoff.Messages(), 1)
	p = b.get(p.loc)
	require.Contains(t, p.body, "Resolved as commit. Handed to the forwarder.")
	require.Contains(t, p.body, `<span class="badge s-COMMITTED" id="status">COMMITTED</span>`)
	require.Regexp(t, `resolve_commit</td><td>alice</td><td>shop confirmed</td>`, p.body)
	audit, err := env.Store.Audit(t.Context(), admintest.Biz, admintest.KeyVF)
	require.NoError(t, err)
	require.Equal(t, "alice", audit[0].Who)

	// Wrong state: 409 with the reason, on the message page.
	p = b.post(path+"/resolve", url.Values{"csrf": {tok}, "decision": {"rollback"}, "reason": {"x"}})
	require.Equal(t, http.StatusConflict, p.code)
	require.Contains(t, p.body, "cannot resolve as rollback a COMMITTED message")

	// Redeliver and retry forms.
	dead := detailPath(admintest.Biz2, admintest.KeyDead)
	p = b.get(dead)
	require.Contains(t, p.body, `id="redeliver-form"`)
	p = b.post(dead+"/redeliver", url.Values{"csrf": {tok}, "reason": {"topic created"}})
	require.Equal(t, http.StatusSeeOther, p.code, p.body)
	require.Len(t, env.Handoff.Messages(), 2)
	p = b.post(detailPath(admintest.Biz, admintest.KeyStuck)+"/retry", url.Values{"csrf": {tok}, "reason": {"try now"}})
	require.Equal(t, http.StatusSeeOther, p.code, p.body)
	require.Equal(t, detailPath(admintest.Biz, admintest.KeyStuck)+"?done=retry_now", p.loc)

	// Bulk retry from the overview.
	p = b.post("/ui/bizids/pay/retry", url.Values{"csrf": {tok}, "reason": {"outage over"}})
	require.Equal(t, http.StatusSeeOther, p.code, p.body)
	audit, err = env.Store.Audit(t.Context(), admintest.Biz2, admintest.KeyBinary)
	require.NoError(t, err)
	require.Len(t, audit, 1)

	p = b.get(detailPath("orders", "ghost"))
	require.Equal(t, http.StatusNotFound, p.code)
}

func TestUICSRF(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	b := newBrowser(t, env)
	b.login(admintest.AdminToken)
	path := detailPath(admintest.Biz, admintest.KeyVF) + "/resolve"
	tok := csrf(t, b.get(detailPath(admintest.Biz, admintest.KeyVF)))
	form := func(tok string) url.Values {
		return url.Values{"csrf": {tok}, "decision": {"commit"}, "reason": {"r"}}
	}

	p := b.post(path, form(""))
	require.Equal(t, http.StatusForbidden, p.code)
	require.Contains(t, p.body, "form token missing or invalid")
	p = b.post(path, form(tok+"x"))
	require.Equal(t, http.StatusForbidden, p.code)

	// Another user's form token does not work either.
	other := newBrowser(t, env)
	other.login(admintest.ReadToken)
	p = b.post(path, form(csrf(t, other.get("/ui/"))))
	require.Equal(t, http.StatusForbidden, p.code)

	// Cross-site requests are refused even with the right token.
	b.hdr.Set("Sec-Fetch-Site", "cross-site")
	p = b.post(path, form(tok))
	require.Equal(t, http.StatusForbidden, p.code)
	b.hdr.Del("Sec-Fetch-Site")
	b.hdr.Set("Origin", "http://evil.example")
	p = b.post(path, form(tok))
	require.Equal(t, http.StatusForbidden, p.code)
	b.hdr.Del("Origin")

	// Without a session at all.
	anon := newBrowser(t, env)
	p = anon.post(path, form(tok))
	require.Equal(t, http.StatusUnauthorized, p.code)

	requireUnchanged(t, env)

	// The same-origin request with the token works.
	b.hdr.Set("Sec-Fetch-Site", "same-origin")
	p = b.post(path, form(tok))
	require.Equal(t, http.StatusSeeOther, p.code, p.body)
}

func TestUIReadScope(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, newFakeDLQ())
	b := newBrowser(t, env)
	b.login(admintest.ReadToken)
	p := b.get(detailPath(admintest.Biz, admintest.KeyVF))
	require.Equal(t, http.StatusOK, p.code)
	require.NotContains(t, p.body, `id="resolve-form"`)
	require.Contains(t, p.body, "Possible actions: resolve, retry, cancel. Your token is read-only")
	require.NotContains(t, b.get("/ui/").body, "Retry all")
	require.NotContains(t, b.get("/ui/dlq").body, "Replay")
	tok := csrf(t, p)
	for _, path := range []string{
		detailPath(admintest.Biz, admintest.KeyVF) + "/resolve",
		detailPath(admintest.Biz, admintest.KeyStuck) + "/retry",
		"/ui/bizids/orders/retry",
		"/ui/dlq/0/3/replay",
	} {
		p = b.post(path, url.Values{"csrf": {tok}, "decision": {"commit"}, "reason": {"r"}})
		require.Equal(t, http.StatusForbidden, p.code, path)
		require.Contains(t, p.body, "actions need scope")
	}
	requireUnchanged(t, env)
}

func TestUIDLQ(t *testing.T) {
	t.Parallel()
	dlq := newFakeDLQ()
	env := admintest.New(t, dlq)
	b := newBrowser(t, env)
	b.login(admintest.AdminToken)
	p := b.get("/ui/dlq?limit=2")
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Contains(t, p.body, "decode: bad JSON")
	require.Contains(t, p.body, `action="/ui/dlq/0/3/replay"`)
	require.Contains(t, p.body, "Next page")
	p = b.post("/ui/dlq/0/3/replay", url.Values{"csrf": {csrf(t, p)}, "reason": {"producer fixed"}})
	require.Equal(t, http.StatusSeeOther, p.code, p.body)
	require.Equal(t, []string{"0/3"}, dlq.Replayed())

	none := admintest.New(t, nil)
	nb := newBrowser(t, none)
	nb.login(admintest.ReadToken)
	require.Contains(t, nb.get("/ui/dlq").body, "no dead-letter topic is configured")
}

func TestUIInsecureAndClosed(t *testing.T) {
	t.Parallel()
	open := admintest.New(t, nil, func(c *admin.Config) { c.Tokens, c.Insecure = nil, true })
	b := newBrowser(t, open)
	p := b.get("/ui/")
	require.Equal(t, http.StatusOK, p.code)
	require.Contains(t, p.body, "insecure mode")
	path := detailPath(admintest.Biz, admintest.KeyVF)
	tok := csrf(t, b.get(path))
	p = b.post(path+"/resolve", url.Values{"csrf": {tok}, "decision": {"rollback"}, "reason": {"dev cleanup"}})
	require.Equal(t, http.StatusSeeOther, p.code, p.body)
	audit, err := open.Store.Audit(t.Context(), admintest.Biz, admintest.KeyVF)
	require.NoError(t, err)
	require.Equal(t, "anonymous", audit[0].Who)
	// Even open, forms need the form token.
	require.Equal(t, http.StatusForbidden, b.post(detailPath(admintest.Biz, admintest.KeyStuck)+"/retry", url.Values{"reason": {"x"}}).code)

	closed := admintest.New(t, nil, func(c *admin.Config) { c.Tokens = nil })
	cb := newBrowser(t, closed)
	p = cb.get("/ui/")
	require.Equal(t, http.StatusUnauthorized, p.code)
	require.Contains(t, p.body, "no admin tokens are configured")
	p = cb.post("/ui/login", url.Values{"token": {admintest.AdminToken}})
	require.Equal(t, http.StatusUnauthorized, p.code)
}

// A key that cannot be a path segment ("..") is routed through ?key=.
func TestUIDotKey(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	_, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{{BizID: "odd", Key: "..", Event: state.Event{
		Kind: state.KindPrepare, At: env.Clock.Now(), Body: &state.Body{Payload: []byte("dots"), Topic: "t", CheckAfter: time.Minute},
	}}}})
	require.NoError(t, err)
	b := newBrowser(t, env)
	b.login(admintest.AdminToken)
	body := html.UnescapeString(b.get("/ui/messages?biz_id=odd").body)
	require.Contains(t, body, `href="/ui/m/odd?key=..`)
	p := b.get("/ui/m/odd?key=..")
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Contains(t, html.UnescapeString(p.body), `action="/ui/m/odd/retry?key=.."`)
	p = b.post("/ui/m/odd/retry?key=..", url.Values{"csrf": {csrf(t, p)}, "reason": {"dots"}})
	require.Equal(t, http.StatusSeeOther, p.code, p.body)
	require.Equal(t, "/ui/m/odd?key=..&done=retry_now", p.loc)
	audit, err := env.Store.Audit(t.Context(), "odd", "..")
	require.NoError(t, err)
	require.Len(t, audit, 1)
}

// The message page shows the trace id of the producer's traceparent.
func TestUIMessageShowsTraceID(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	_, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{{
		BizID: admintest.Biz, Key: "traced", Partition: 1, Event: state.Event{Kind: state.KindPrepare, At: env.Clock.Now(), Body: &state.Body{
			Headers: []envelope.Header{{Key: "traceparent", Value: []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}},
			Topic:   "orders-events", CheckAfter: time.Minute,
		}},
	}}})
	require.NoError(t, err)
	b := newBrowser(t, env)
	b.login(admintest.AdminToken)
	p := b.get(detailPath(admintest.Biz, "traced"))
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Contains(t, p.body, `<dt>trace id</dt><dd class="mono" id="trace-id">4bf92f3577b34da6a3ce929d0e0e4736</dd>`)
	p = b.get(detailPath(admintest.Biz, admintest.KeyVF))
	require.NotContains(t, p.body, `id="trace-id"`, "no traceparent, no trace id")
}

// A message sent with its commit (no claimed attempt) reads as sent once,
// not "sends 0"; its conflicts say what was ignored and where to find
// each, instead of a bare red count.
func TestUIMessageSendAttemptsAndConflicts(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	ctx := t.Context()
	apply := func(k state.Kind, body *state.Body) {
		_, err := env.Store.Apply(ctx, store.ApplyRequest{Changes: []store.Change{{
			BizID: admintest.Biz, Key: "conflicted", Partition: 1, Event: state.Event{Kind: k, At: env.Clock.Now(), Body: body}}}})
		require.NoError(t, err)
	}
	apply(state.KindPrepare, &state.Body{Topic: "orders-events", CheckAfter: time.Minute})
	apply(state.KindCommit, nil)
	m, err := env.Store.Get(ctx, admintest.Biz, "conflicted")
	require.NoError(t, err)
	require.NoError(t, env.Store.MarkSent(ctx, []store.Sent{{ID: m.ID, Ref: "orders-events/0@1"}}))
	apply(state.KindRollback, nil)
	apply(state.KindRollback, nil)
	m, err = env.Store.Get(ctx, admintest.Biz, "conflicted")
	require.NoError(t, err)
	require.Equal(t, 0, m.SendAttempts, "the fixture: sent without a claimed attempt")
	require.Equal(t, 2, m.Conflicts)

	b := newBrowser(t, env)
	b.login(admintest.AdminToken)
	p := b.get(detailPath(admintest.Biz, "conflicted"))
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Contains(t, p.body, `<dt>send attempts</dt><dd id="send-attempts">1 <span class="muted">(sent with its commit)</span></dd>`)
	require.Contains(t, p.body, `<dt>conflicts</dt><dd id="conflicts">2 later envelopes contradicted the first decision and were ignored: a ROLLBACK after the COMMIT, or a CANCEL after the send. The status above stands.`)
	require.Contains(t, p.body, `"conflicting decision ignored" or "cancel came after the send", key=conflicted.`)
	require.NotContains(t, p.body, `<dd class="hot">2</dd>`)
}

// The message page names a control lane's store partition.
func TestUIMessageShowsLanePartition(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	for key, part := range map[string]int32{"on-lane": 20007, "default": 3} {
		_, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{{
			BizID: admintest.Biz, Key: key, Partition: part, Event: state.Event{Kind: state.KindPrepare, At: env.Clock.Now(), Body: &state.Body{
				Topic: "orders-events", CheckAfter: time.Minute,
			}},
		}}})
		require.NoError(t, err)
	}
	b := newBrowser(t, env)
	b.login(admintest.AdminToken)
	p := b.get(detailPath(admintest.Biz, "on-lane"))
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Contains(t, p.body, `<dt>partition</dt><dd>20007 (lane 2, partition 7)</dd>`)
	p = b.get(detailPath(admintest.Biz, "default"))
	require.Contains(t, p.body, `<dt>partition</dt><dd>3</dd>`)
}

// The console's overview and /api/v1/counts show the duplicate PREPAREs
// with a different body the ingester ignored, per bizID.
func TestDifferingPreparesShown(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil, func(c *admin.Config) {
		c.DifferingPrepares = func() map[string]int64 { return map[string]int64{"orders": 3} }
	})
	c := decode[adminapi.Counts](t, get(t, env, "/api/v1/counts"), http.StatusOK)
	require.Equal(t, map[string]int64{"orders": 3}, c.DifferingPrepares)
	b := newBrowser(t, env)
	b.login(admintest.ReadToken)
	p := b.get("/ui/")
	require.Equal(t, http.StatusOK, p.code)
	require.Contains(t, p.body, "PREPAREs ignored for a different body")
	require.Regexp(t, `(?s)id="differing".*orders</td><td class="n hot">3<`, p.body)

	// None: no section.
	plain := admintest.New(t, nil)
	pb := newBrowser(t, plain)
	pb.login(admintest.ReadToken)
	require.NotContains(t, pb.get("/ui/").body, "different body")
}
