package admin_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/testsupport/headless"
)

// TestBrowserFairShare opens the console's fair-share page in headless
// Chromium: a bizID whose check-backs are held by its worker cap shows
// why, beside its forward columns, and a target paused by its broker
// shows for how long and why.
func TestBrowserFairShare(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	env := admintest.New(t, nil, func(c *admin.Config) {
		c.Checkbacks = func() map[string]adminapi.BizCheckback {
			return map[string]adminapi.BizCheckback{"slowcb": {CheckbackWeight: 1, CheckbackWorkers: 3,
				CheckbackWaiting: 12, CheckbackRunning: 3, CheckbackThrottled: []string{"workers"}}}
		}
		c.Targets = func() []adminapi.TargetThrottle {
			return []adminapi.TargetThrottle{{Target: "rocket", Paused: true, RemainingSeconds: 0.8,
				Cause: "busy", PauseSeconds: 1.6, Since: &since}}
		}
	})
	bctx := headless.Browser(t)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	require.NoError(t, chromedp.Do(bctx,
		signIn(env.Server.URL, admintest.ReadToken),
		chromedp.Navigate(env.Server.URL+"/ui/bizids"),
		chromedp.WaitVisible(css(`tr[data-biz="slowcb"]`)),
	))
	held, err := chromedp.Run(bctx, chromedp.Text(css(`tr[data-biz="slowcb"] td.cb-throttled`)))
	require.NoError(t, err)
	require.Equal(t, "by workers", strings.TrimSpace(held))
	waiting, err := chromedp.Run(bctx, chromedp.Text(css(`tr[data-biz="slowcb"] td.cb-waiting`)))
	require.NoError(t, err)
	require.Equal(t, "12", strings.TrimSpace(waiting))
	target, err := chromedp.Run(bctx, chromedp.Text(css(`tr[data-target="rocket"]`)))
	require.NoError(t, err)
	require.Contains(t, target, "paused")
	require.Contains(t, target, "0.8s")
	require.Contains(t, target, "broker busy (RocketMQ SYSTEM_BUSY)")
}
