package admin_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/storetest"
)

// GET /api/v1/bizids joins the store's send backlog per bizID with the
// forwarder's view; the console shows the same, with why a bizID is held.
func TestBizShares(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, newEnv newEnv) {
		env := newEnv(t, nil, func(c *admin.Config) {
			c.Forwarding = func() []adminapi.BizForwarding {
				return []adminapi.BizForwarding{
					{BizID: "flood", Configured: true, Weight: 1, Rate: 100, Burst: 100, MaxInFlight: 500,
						InFlight: 500, SendRate: 99.5, Throttled: []string{"max_in_flight", "rate"}},
					{BizID: "vip", Configured: true, Weight: 4},
				}
			}
		})
		at := env.Clock.Now()
		var cs []store.Change
		for _, k := range storetest.Keys("f", 30) {
			cs = append(cs, storetest.Prepare("flood", k, 0, at), storetest.Commit("flood", k, 0, at))
		}
		_, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: cs}) // due, not leased
		require.NoError(t, err)
		env.Clock.Advance(90 * time.Second)

		got := decode[adminapi.BizShares](t, get(t, env, "/api/v1/bizids"), http.StatusOK)
		byBiz := map[string]adminapi.BizShare{}
		for _, b := range got.BizIDs {
			byBiz[b.BizID] = b
		}
		f := byBiz["flood"]
		require.Equal(t, int64(30), f.Backlog)
		require.Equal(t, int64(30), f.Due)
		require.NotNil(t, f.OldestDue)
		require.Equal(t, 90.0, f.OldestDueAge)
		require.Equal(t, []string{"max_in_flight", "rate"}, f.Throttled)
		require.Equal(t, 99.5, f.SendRate)
		require.Equal(t, 4, byBiz["vip"].Weight)
		require.Zero(t, byBiz["vip"].Backlog)
		require.Contains(t, get(t, env, "/api/v1/bizids?x=1").err(t), "unknown query parameter")

		b := newBrowser(t, env)
		b.login(admintest.ReadToken)
		p := b.get("/ui/bizids")
		require.Equal(t, http.StatusOK, p.code, p.body)
		require.Contains(t, p.body, "by max_in_flight, rate")
		require.Contains(t, p.body, "Fair share per bizID")
		require.Contains(t, p.body, "100/s, burst 100")
	})
}
