package client_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/client"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// Keys that are awkward in a URL path all work through the client.
var oddKeys = []string{
	"a/b", "a/../b", "a//b", "50%", "q?x#y", " sp ace", "ключ", ".", "..", "a/.", "x/", "/x", "%2F", "a%2Fb", "k:1:2", "+plus&amp=",
}

func TestOddKeys(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	var changes []store.Change
	for _, k := range oddKeys {
		changes = append(changes, store.Change{BizID: "odd", Key: k, Event: state.Event{
			Kind: state.KindPrepare, At: env.Clock.Now(), Body: &state.Body{Payload: []byte(k), Topic: "t", CheckAfter: time.Minute},
		}})
	}
	_, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: changes})
	require.NoError(t, err)

	c, err := client.New(env.Server.URL, admintest.AdminToken)
	require.NoError(t, err)
	for _, k := range oddKeys {
		d, err := c.Get(t.Context(), "odd", k)
		require.NoError(t, err, k)
		require.Equal(t, k, d.Key)
		require.Equal(t, k, *d.PayloadText)
		res, err := c.Resolve(t.Context(), "odd", k, adminapi.DecisionCommit, "odd key "+k)
		require.NoError(t, err, k)
		require.Equal(t, k, res.Message.Key)
		require.Equal(t, "COMMITTED", res.Message.Status)
		audit, err := env.Store.Audit(t.Context(), "odd", k)
		require.NoError(t, err)
		require.Len(t, audit, 1, k)
	}
	l, err := c.List(t.Context(), client.ListOptions{BizID: "odd", Key: "/", Limit: 100})
	require.NoError(t, err)
	require.Len(t, l.Messages, 6) // a/b a/../b a//b a/. x/ /x
}

func TestErrors(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)
	c, err := client.New(env.Server.URL+"/", admintest.ReadToken)
	require.NoError(t, err)
	_, err = c.Retry(t.Context(), "orders", "o-1", "r")
	require.True(t, client.IsStatus(err, http.StatusForbidden), err)
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Message, "needs scope")
	require.Equal(t, `403 Forbidden: token "viewer" has scope "read"; this action needs scope "admin"`, err.Error())

	_, err = c.Get(t.Context(), "orders", "ghost")
	require.True(t, client.IsStatus(err, http.StatusNotFound))

	// A non-JSON error body (a proxy in between) still gives its text.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream connect error", http.StatusBadGateway)
	}))
	defer proxy.Close()
	pc, err := client.New(proxy.URL, "")
	require.NoError(t, err)
	_, err = pc.Counts(t.Context())
	require.EqualError(t, err, "502 Bad Gateway: upstream connect error")

	for _, bad := range []string{"", "127.0.0.1:8080", "ftp://x", "http://"} {
		_, err := client.New(bad, "")
		require.Error(t, err, bad)
	}
}

// GET /api/v1/bizids comes a page at a time, in bizID order (limit, after,
// next), so that many bizIDs never make one huge answer; the client's
// BizShares reads every page.
func TestBizSharesPages(t *testing.T) {
	t.Parallel()
	const n = 2500
	var rows []adminapi.BizForwarding
	for i := range n {
		rows = append(rows, adminapi.BizForwarding{BizID: fmt.Sprintf("biz-%04d", i), Weight: 1})
	}
	env := admintest.New(t, nil, func(c *admin.Config) {
		c.Forwarding = func() []adminapi.BizForwarding { return rows }
	})
	c, err := client.New(env.Server.URL, admintest.ReadToken)
	require.NoError(t, err)

	first, err := c.BizSharesPage(t.Context(), "", 0)
	require.NoError(t, err)
	require.Len(t, first.BizIDs, 1000, "the admin list page limit")
	require.Equal(t, "biz-0000", first.BizIDs[0].BizID)
	require.Equal(t, "biz-0999", first.Next)
	last, err := c.BizSharesPage(t.Context(), "biz-2399", 500)
	require.NoError(t, err)
	require.Len(t, last.BizIDs, 100)
	require.Empty(t, last.Next, "the last page")

	all, err := c.BizShares(t.Context())
	require.NoError(t, err)
	require.Len(t, all.BizIDs, n)
	for i, b := range all.BizIDs {
		require.Equal(t, fmt.Sprintf("biz-%04d", i), b.BizID)
	}
	_, err = c.BizSharesPage(t.Context(), "", 1001)
	require.ErrorContains(t, err, "limit")
}
