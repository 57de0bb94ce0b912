package admin_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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
			c.Checkbacks = func() map[string]adminapi.BizCheckback {
				return map[string]adminapi.BizCheckback{
					"flood": {CheckbackWeight: 1, CheckbackRate: 5, CheckbackBurst: 1, CheckbackWorkers: 3,
						CheckbackWaiting: 6, CheckbackRunning: 1, CheckbackThrottled: []string{"rate"}},
					"slowcb": {CheckbackWeight: 2, CheckbackWorkers: 3, CheckbackWaiting: 12, CheckbackRunning: 3,
						CheckbackThrottled: []string{"workers"}},
				}
			}
			c.Targets = func() []adminapi.TargetThrottle {
				since := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
				return []adminapi.TargetThrottle{
					{Target: "kafka-main", Paused: true, RemainingSeconds: 1.5, Cause: "broker_throttle", PauseSeconds: 2, Since: &since},
					{Target: "rocket", PauseSeconds: 0},
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
		require.Equal(t, []string{"rate"}, f.CheckbackThrottled, "check-backs held by their rate, beside the forward columns")
		require.Equal(t, 6, f.CheckbackWaiting)
		require.Equal(t, 5.0, f.CheckbackRate)
		slow := byBiz["slowcb"] // only the verifier knows it: a row with forward defaults
		require.Equal(t, []string{"workers"}, slow.CheckbackThrottled)
		require.Equal(t, 12, slow.CheckbackWaiting)
		require.Equal(t, 3, slow.CheckbackRunning)
		require.Equal(t, 1, slow.Weight)
		require.Equal(t, []string{}, slow.Throttled)
		require.Equal(t, []string{}, byBiz["vip"].CheckbackThrottled, "a bizID the verifier does not name: no hold")
		require.Equal(t, 1, byBiz["vip"].CheckbackWeight)
		require.Len(t, got.Targets, 2)
		require.True(t, got.Targets[0].Paused)
		require.Equal(t, "broker_throttle", got.Targets[0].Cause)
		require.Equal(t, 1.5, got.Targets[0].RemainingSeconds)
		require.False(t, got.Targets[1].Paused)

		// The JSON names the documented fields.
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, get(t, env, "/api/v1/bizids").body))
		raw := compact.String()
		for _, field := range []string{`"checkback_waiting":6`, `"checkback_running":1`, `"checkback_throttled":["rate"]`,
			`"checkback_rate":5`, `"checkback_workers":3`, `"targets":[`, `"paused":true`, `"cause":"broker_throttle"`,
			`"remaining_seconds":1.5`, `"pause_seconds":2`, `"since":"2026-11-26T12:00:00Z"`} {
			require.Contains(t, raw, field)
		}
		require.Contains(t, get(t, env, "/api/v1/bizids?x=1").err(t), "unknown query parameter")

		b := newBrowser(t, env)
		b.login(admintest.ReadToken)
		p := b.get("/ui/bizids")
		require.Equal(t, http.StatusOK, p.code, p.body)
		require.Contains(t, p.body, "by max_in_flight, rate")
		require.Contains(t, p.body, "Fair share per bizID")
		require.Contains(t, p.body, "100/s, burst 100")
		require.Contains(t, p.body, "5/s, burst 1; 3 workers")
		require.Regexp(t, `slowcb</a>.*?(?s:.*?)<span class="hot">by workers</span>`, p.body)
		require.Contains(t, p.body, "Targets paused by their broker")
		require.Regexp(t, `kafka-main</td>\s*<td><span class="hot">paused</span></td>\s*<td>1.5s</td>\s*<td>2.0s</td>\s*<td>broker throttle \(Kafka throttle_time_ms\)</td>`, p.body)
		require.Regexp(t, `rocket</td>\s*<td><span class="muted">no</span></td>`, p.body)
	})
}

// The console's fair-share page shows a page of bizIDs and links to the
// next; a bad limit is a bad request.
func TestUIBizSharesPages(t *testing.T) {
	t.Parallel()
	var rows []adminapi.BizForwarding
	for i := range 25 {
		rows = append(rows, adminapi.BizForwarding{BizID: fmt.Sprintf("biz-%02d", i), Weight: 1})
	}
	env := admintest.New(t, nil, func(c *admin.Config) {
		c.Forwarding = func() []adminapi.BizForwarding { return rows }
	})
	b := newBrowser(t, env)
	b.login(admintest.ReadToken)
	p := b.get("/ui/bizids?limit=10")
	require.Equal(t, http.StatusOK, p.code, p.body)
	require.Equal(t, 10, strings.Count(p.body, `data-biz="biz-`))
	require.Contains(t, p.body, `href="/ui/bizids?after=biz-09&amp;limit=10"`)
	p = b.get("/ui/bizids?after=biz-19&limit=10")
	require.Equal(t, 5, strings.Count(p.body, `data-biz="biz-`))
	require.NotContains(t, p.body, "Next page")
	require.Equal(t, http.StatusBadRequest, b.get("/ui/bizids?limit=0").code)
	require.Equal(t, http.StatusBadRequest, get(t, env, "/api/v1/bizids?limit=1001").code)
}
