package admin_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/storetest"
)

// addBlockedKey commits cart-a, cart-b and cart-c of order key cart-1 (in
// that order) and makes cart-a DEAD: the key is blocked, two wait.
func addBlockedKey(t *testing.T, env *admintest.Env) {
	t.Helper()
	now := env.Clock.Now()
	var changes []store.Change
	for _, k := range []string{"cart-a", "cart-b", "cart-c"} {
		changes = append(changes, storetest.PrepareOrdered(admintest.Biz, k, "cart-1", 3, now.Add(-time.Hour)),
			storetest.Commit(admintest.Biz, k, 3, now.Add(-time.Hour)))
	}
	fail := storetest.Event(admintest.Biz, "cart-a", 3, state.Event{Kind: state.KindSendFailed, At: now,
		Permanent: true, Err: "topic is read-only"})
	for _, batch := range [][]store.Change{changes, {fail}} {
		res, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: batch, Ordered: true})
		require.NoError(t, err)
		for _, o := range res.Outcomes {
			require.NoError(t, o.Err)
		}
	}
}

// The blocked keys view and the operator actions on a blocked key: close
// the head (audited, reason required), release the next one.
func TestBlockedKeysAndActions(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil)
		bl := decode[adminapi.BlockedKeys](t, get(t, env, "/api/v1/blocked"), http.StatusOK)
		require.Empty(t, bl.Keys)
		addBlockedKey(t, env)
		bl = decode[adminapi.BlockedKeys](t, get(t, env, "/api/v1/blocked?biz_id=orders&limit=5"), http.StatusOK)
		require.Len(t, bl.Keys, 1)
		k := bl.Keys[0]
		require.Equal(t, "cart-1", k.OrderKey)
		require.Equal(t, "cart-a", k.Head.Key)
		require.Equal(t, "DEAD", k.Head.SendStatus)
		require.Equal(t, "topic is read-only", k.Head.LastError)
		require.EqualValues(t, 2, k.Waiting)
		require.EqualValues(t, 1, k.Head.OrderSeq)
		require.Empty(t, decode[adminapi.BlockedKeys](t, get(t, env, "/api/v1/blocked?biz_id=pay"), http.StatusOK).Keys)
		require.Equal(t, http.StatusBadRequest, get(t, env, "/api/v1/blocked?limit=0").code)
		require.Equal(t, http.StatusBadRequest, get(t, env, "/api/v1/blocked?bizid=x").code)

		d := decode[adminapi.MessageDetail](t, get(t, env, adminapi.MessagePath(admintest.Biz, "cart-a")), http.StatusOK)
		require.Equal(t, []string{"redeliver", "retry", "close-head", "release", "cancel"}, d.Actions)

		path := adminapi.ActionPath(admintest.Biz, "cart-a", adminapi.ActionCloseHead)
		a := post(t, env, path, reason(" "))
		require.Equal(t, http.StatusBadRequest, a.code)
		require.Contains(t, a.err(t), "reason: required")
		a = do(t, env, call{method: "POST", path: path, token: admintest.ReadToken, body: reason("r")})
		require.Equal(t, http.StatusForbidden, a.code)
		res := decode[adminapi.ActionResult](t, post(t, env, path, reason("topic stays read-only; consumer told")), http.StatusOK)
		require.Equal(t, "close_head", res.Action)
		require.Equal(t, "applied", res.Effect)
		require.Equal(t, "DEAD", res.Message.SendStatus)
		require.Zero(t, res.Message.OrderSeq)
		require.Equal(t, "close_head", res.Message.Audit[0].Action)
		require.Equal(t, "topic stays read-only; consumer told", res.Message.Audit[0].Reason)
		require.Empty(t, decode[adminapi.BlockedKeys](t, get(t, env, "/api/v1/blocked"), http.StatusOK).Keys, "cart-b has not failed")

		// Release cart-b: cart-c may go; cart-b is sent without order.
		res = decode[adminapi.ActionResult](t, post(t, env, adminapi.ActionPath(admintest.Biz, "cart-b", adminapi.ActionRelease), reason("skip it")), http.StatusOK)
		require.Equal(t, "release_order", res.Action)
		require.Equal(t, "PENDING", res.Message.SendStatus)
		a = post(t, env, adminapi.ActionPath(admintest.Biz, "cart-b", adminapi.ActionRelease), reason("again"))
		require.Equal(t, http.StatusConflict, a.code, "released already")
		a = post(t, env, adminapi.ActionPath(admintest.Biz, admintest.KeySent, adminapi.ActionCloseHead), reason("r"))
		require.Equal(t, http.StatusConflict, a.code, "a SENT message is not closed")
	})
}

// The console lists blocked keys and offers the actions on the head.
func TestUIBlockedKeys(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	addBlockedKey(t, env)
	b := newBrowser(t, env)
	b.login(admintest.AdminToken)
	p := b.get("/ui/blocked")
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Contains(t, p.body, "cart-1")
	require.Contains(t, p.body, "topic is read-only")
	require.Contains(t, p.body, `href="/ui/m/orders/cart-a"`)
	require.Contains(t, p.body, `<td>2</td>`, "two wait")
	path := detailPath(admintest.Biz, "cart-a")
	p = b.get(path)
	require.Contains(t, p.body, `id="close-head-form"`)
	require.Contains(t, p.body, `id="release-form"`)
	p = b.post(path+"/close-head", url.Values{"csrf": {csrf(t, p)}, "reason": {"given up"}})
	require.Equal(t, http.StatusSeeOther, p.code, p.body)
	p = b.get(p.loc)
	require.Contains(t, p.body, "the later messages of its order key go on")
	require.Contains(t, b.get("/ui/blocked").body, "no blocked order keys")
}
