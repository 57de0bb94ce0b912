package admin_test

import (
	"html"
	"net/http"
	"net/url"
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

// Orphan COMMITs added to the fixture: committed, PREPARE never seen.
const (
	keyOrphanOld   = "orphan-old"   // 20 minutes ago
	keyOrphanFresh = "orphan-fresh" // 30 seconds ago
)

// addOrphans commits two messages of admintest.Biz whose PREPARE never came.
func addOrphans(t *testing.T, env *admintest.Env) {
	t.Helper()
	now := env.Clock.Now()
	res, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{
		{BizID: admintest.Biz, Key: keyOrphanOld, Partition: 2, Event: state.Event{Kind: state.KindCommit, At: now.Add(-20 * time.Minute)}},
		{BizID: admintest.Biz, Key: keyOrphanFresh, Partition: 2, Event: state.Event{Kind: state.KindCommit, At: now.Add(-30 * time.Second)}},
	}})
	require.NoError(t, err)
	for _, o := range res.Outcomes {
		require.NoError(t, o.Err)
	}
}

func TestListOrphans(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		addOrphans(t, env)
		l := decode[adminapi.MessageList](t, get(t, env, "/api/v1/messages?orphan=true"), http.StatusOK)
		require.Equal(t, []string{"orders:" + keyOrphanFresh, "orders:" + keyOrphanOld}, keys(l.Messages))
		for _, m := range l.Messages {
			require.False(t, m.HasBody)
			require.Equal(t, "COMMITTED", m.Status)
		}
		l = decode[adminapi.MessageList](t, get(t, env, "/api/v1/messages?orphan=true&older_than=10m"), http.StatusOK)
		require.Equal(t, []string{"orders:" + keyOrphanOld}, keys(l.Messages))
		l = decode[adminapi.MessageList](t, get(t, env, "/api/v1/messages?orphan=true&status=COMMITTED&biz_id=pay"), http.StatusOK)
		require.Empty(t, l.Messages)
		l = decode[adminapi.MessageList](t, get(t, env, "/api/v1/messages?orphan=false&status=COMMITTED"), http.StatusOK)
		require.Len(t, l.Messages, 4, "orphan=false does not filter")

		for q, want := range map[string]string{
			"orphan=maybe":                      `orphan: "maybe" is not true or false`,
			"orphan=true&status=PREPARED":       "an orphan COMMIT is COMMITTED, not PREPARED",
			"orphan=true&send_status=SENT":      "an orphan COMMIT is never SENT",
			"orphan=true&send_status=DEAD":      "an orphan COMMIT is never DEAD",
			"orphan=true&status=ROLLED_BACK&x=": "unknown query parameter",
		} {
			a := get(t, env, "/api/v1/messages?"+q)
			require.Equal(t, http.StatusBadRequest, a.code, q)
			require.Contains(t, a.err(t), want, q)
		}
	})
}

func TestCloseOrphan(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		addOrphans(t, env)
		d := decode[adminapi.MessageDetail](t, get(t, env, adminapi.MessagePath(admintest.Biz, keyOrphanOld)), http.StatusOK)
		require.Equal(t, []string{"close-orphan", "cancel"}, d.Actions)
		path := adminapi.ActionPath(admintest.Biz, keyOrphanOld, adminapi.ActionCloseOrphan)

		// Refused without a reason, with a decision, or without the admin
		// scope; nothing changes.
		a := post(t, env, path, reason(" "))
		require.Equal(t, http.StatusBadRequest, a.code)
		require.Contains(t, a.err(t), "reason: required")
		a = post(t, env, path, adminapi.ActionRequest{Decision: "rollback", Reason: "r"})
		require.Equal(t, http.StatusBadRequest, a.code)
		require.Contains(t, a.err(t), "decision: only for resolve")
		a = do(t, env, call{method: "POST", path: path, body: reason("r")})
		require.Equal(t, http.StatusUnauthorized, a.code)
		a = do(t, env, call{method: "POST", path: path, token: admintest.ReadToken, body: reason("r")})
		require.Equal(t, http.StatusForbidden, a.code)
		require.Contains(t, a.err(t), "needs scope")
		m, err := env.Store.Get(t.Context(), admintest.Biz, keyOrphanOld)
		require.NoError(t, err)
		require.True(t, m.Orphan())

		res := decode[adminapi.ActionResult](t, post(t, env, path, reason("producer confirmed the order was never placed")), http.StatusOK)
		require.Equal(t, "close_orphan", res.Action)
		require.Equal(t, "applied", res.Effect)
		require.False(t, res.HandedOff)
		require.Equal(t, "ROLLED_BACK", res.Message.Status)
		require.Empty(t, res.Message.Actions)
		require.Equal(t, []adminapi.AuditEntry{{
			Action: "close_orphan", Who: admintest.AdminName, Reason: "producer confirmed the order was never placed",
			At: env.Clock.Now(), Before: "COMMITTED", After: "ROLLED_BACK",
		}}, res.Message.Audit)
		require.Empty(t, env.Handoff.Messages())
		l := decode[adminapi.MessageList](t, get(t, env, "/api/v1/messages?orphan=true"), http.StatusOK)
		require.Equal(t, []string{"orders:" + keyOrphanFresh}, keys(l.Messages))

		// A COMMITTED message with its body is never closed: 409.
		for _, k := range []struct{ biz, key string }{{admintest.Biz, admintest.KeySent}, {admintest.Biz2, admintest.KeyDead}} {
			a = post(t, env, adminapi.ActionPath(k.biz, k.key, adminapi.ActionCloseOrphan), reason("r"))
			require.Equal(t, http.StatusConflict, a.code, k.key)
			require.Contains(t, a.err(t), "cannot close a COMMITTED message that has its body", k.key)
			m, err := env.Store.Get(t.Context(), k.biz, k.key)
			require.NoError(t, err)
			require.Equal(t, state.Committed, m.Status)
		}
		// Nor anything else; closing twice is a 409 too.
		a = post(t, env, adminapi.ActionPath(admintest.Biz, admintest.KeyStuck, adminapi.ActionCloseOrphan), reason("r"))
		require.Equal(t, http.StatusConflict, a.code)
		require.Contains(t, a.err(t), "cannot close as orphan a PREPARED message")
		require.Equal(t, http.StatusConflict, post(t, env, path, reason("again")).code)
		a = post(t, env, adminapi.ActionPath(admintest.Biz, "ghost", adminapi.ActionCloseOrphan), reason("r"))
		require.Equal(t, http.StatusNotFound, a.code)
		require.Equal(t, "message not found: orders:ghost", a.err(t))
	})
}

// TestDLQReplayReasonFixAndAudit: the replay needs a reason, passes the fix
// on, and is audited on the message the record names when it exists.
func TestDLQReplayReasonFixAndAudit(t *testing.T) {
	t.Parallel()
	dlq := newFakeDLQ()
	env := admintest.New(t, dlq)
	addOrphans(t, env)
	dlq.recs = append(dlq.recs, admin.DLQRecord{Partition: 2, Offset: 7, Key: []byte("orders:" + keyOrphanOld), Value: []byte("body"),
		Headers: []envelope.Header{{Key: "ec-type", Value: []byte("prepare")}, {Key: "ec-dlq-reason", Value: []byte("ec-topic: required on prepare")}}})

	for name, c := range map[string]struct {
		body any
		ct   string
		code int
		want string
	}{
		"no body":     {nil, "", 415, "Content-Type missing"},
		"no reason":   {adminapi.DLQReplayRequest{Topic: "orders.events"}, "", 400, "reason: required"},
		"bad topic":   {adminapi.DLQReplayRequest{Reason: "r", Topic: "no spaces allowed"}, "", 400, "bad replay fix"},
		"bad field":   {`{"reason":"r","topik":"x"}`, "", 400, "unknown field"},
		"form body":   {"reason=r", "application/x-www-form-urlencoded", 415, "want application/json"},
		"not json":    {"{", "", 400, "request body"},
		"long reason": {adminapi.DLQReplayRequest{Reason: string(make([]byte, 1001))}, "", 400, "reason"},
	} {
		a := do(t, env, call{method: "POST", path: adminapi.DLQReplayPath(2, 7), token: admintest.AdminToken, body: c.body, contentType: c.ct})
		require.Equal(t, c.code, a.code, name+": "+string(a.body))
		require.Contains(t, a.err(t), c.want, name)
	}
	require.Empty(t, dlq.Replayed(), "nothing replayed by a refused request")

	res := decode[adminapi.DLQReplayResult](t, post(t, env, adminapi.DLQReplayPath(2, 7),
		adminapi.DLQReplayRequest{Reason: "producer sent no topic; it is orders.events", Topic: " orders.events "}), http.StatusOK)
	require.Equal(t, adminapi.DLQReplayResult{Partition: 2, Offset: 7, Replayed: true, Key: "orders:" + keyOrphanOld, Audited: true, Known: true}, res)
	require.Equal(t, []admin.ReplayFix{{Topic: "orders.events"}}, dlq.fixes)
	audit, err := env.Store.Audit(t.Context(), admintest.Biz, keyOrphanOld)
	require.NoError(t, err)
	require.Equal(t, []store.AuditEntry{{BizID: admintest.Biz, Key: keyOrphanOld, Action: "dlq_replay", Who: admintest.AdminName,
		Reason: "producer sent no topic; it is orders.events (dead letter 2/7 replayed with forward topic orders.events)",
		At:     env.Clock.Now(), Before: "COMMITTED without body", After: "COMMITTED without body"}}, audit)

	// A record naming no stored message is replayed and audited too
	// (audit records have their own retention).
	res = decode[adminapi.DLQReplayResult](t, post(t, env, adminapi.DLQReplayPath(0, 3), reason("retry")), http.StatusOK)
	require.True(t, res.Audited)
	require.False(t, res.Known)
	require.Equal(t, "orders:x", res.Key)
}

func TestUIOrphans(t *testing.T) {
	t.Parallel()
	dlq := newFakeDLQ()
	env := admintest.New(t, dlq, func(c *admin.Config) { c.StuckAfter = 10 * time.Minute })
	addOrphans(t, env)
	b := newBrowser(t, env)
	b.login(admintest.AdminToken)

	// The overview's attention list shows the old orphan, not the fresh one.
	body := html.UnescapeString(b.get("/ui/").body)
	require.Contains(t, body, "Orphan COMMITs: committed more than 10m ago, PREPARE missing")
	require.Contains(t, body, `href="/ui/m/orders/`+keyOrphanOld+`"`)
	require.NotContains(t, body, `href="/ui/m/orders/`+keyOrphanFresh+`"`)
	require.Contains(t, body, `href="/ui/messages?older_than=10m0s&orphan=true"`)
	require.Contains(t, body, `title="orphan COMMIT: the PREPARE never arrived">NO BODY</span>`)

	// The message list filter.
	p := b.get("/ui/messages?orphan=true")
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Contains(t, p.body, `name="orphan" value="true" checked`)
	require.Contains(t, p.body, keyOrphanFresh)
	require.NotContains(t, p.body, admintest.KeySent)

	// The close button, with CSRF and a required reason.
	path := detailPath(admintest.Biz, keyOrphanOld)
	p = b.get(path)
	require.Contains(t, p.body, `id="close-orphan-form"`)
	require.NotContains(t, b.get(detailPath(admintest.Biz, admintest.KeySent)).body, `id="close-orphan-form"`)
	tok := csrf(t, p)
	p = b.post(path+"/close-orphan", url.Values{"reason": {"r"}})
	require.Equal(t, http.StatusForbidden, p.code, "no form token")
	p = b.post(path+"/close-orphan", url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusBadRequest, p.code)
	require.Contains(t, p.body, "reason: required")
	p = b.post(path+"/close-orphan", url.Values{"csrf": {tok}, "reason": {"never placed"}})
	require.Equal(t, http.StatusSeeOther, p.code, p.body)
	require.Equal(t, path+"?done=close_orphan", p.loc)
	p = b.get(p.loc)
	require.Contains(t, p.body, "Orphan COMMIT closed as rolled back")
	require.Contains(t, p.body, `id="status">ROLLED_BACK</span>`)
	p = b.post(detailPath(admintest.Biz, admintest.KeySent)+"/close-orphan", url.Values{"csrf": {tok}, "reason": {"x"}})
	require.Equal(t, http.StatusConflict, p.code)
	require.Contains(t, p.body, "has its body")

	// The dead-letter replay form asks for a reason and offers the topic fix.
	p = b.get("/ui/dlq")
	require.Contains(t, p.body, `<input name="reason" placeholder="reason" required`)
	require.Contains(t, p.body, `<input name="topic"`)
	p = b.post("/ui/dlq/0/3/replay", url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusBadRequest, p.code)
	require.Contains(t, p.body, "reason: required")
	require.Empty(t, dlq.Replayed())
	p = b.post("/ui/dlq/0/3/replay", url.Values{"csrf": {tok}, "reason": {"fixed"}, "topic": {"orders.events"}})
	require.Equal(t, http.StatusSeeOther, p.code, p.body)
	require.True(t, strings.HasPrefix(p.loc, "/ui/dlq?flash="), p.loc)
	require.Contains(t, p.loc, "&replayed=0%2F3")
	require.Equal(t, []admin.ReplayFix{{Topic: "orders.events"}}, dlq.fixes)
	require.Contains(t, b.get(p.loc).body, "Replayed 0/3 to the control topic.")
}
