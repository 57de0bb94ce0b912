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

// TestBrowserRegistries opens the console's registries page in headless
// Chromium from the navigation: a registry not connected says so, and a
// service without a provider shows "none" and its last error.
func TestBrowserRegistries(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	env := admintest.New(t, nil, func(c *admin.Config) {
		c.Registries = func() []adminapi.CheckbackRegistry {
			return []adminapi.CheckbackRegistry{{Registry: "zk1:2181", Servers: []string{"zk1:2181"}, Since: since,
				Services: []adminapi.RegistryService{
					{Interface: "com.shop.A", Providers: 2, Known: true, Updated: since},
					{Interface: "com.shop.B", LastError: "no provider of com.shop.B"},
				}}}
		}
	})
	bctx := headless.Browser(t)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	require.NoError(t, chromedp.Do(bctx,
		signIn(env.Server.URL, admintest.ReadToken),
		chromedp.Click(css(`nav a[href="/ui/registries"]`)),
		chromedp.WaitVisible(css(`section[data-registry="zk1:2181"]`)),
	))
	conn, err := chromedp.Run(bctx, chromedp.Text(css(`section[data-registry="zk1:2181"] dd.conn`)))
	require.NoError(t, err)
	require.Contains(t, conn, "NOT connected")
	providers, err := chromedp.Run(bctx, chromedp.Text(css(`tr[data-service="com.shop.B"] td.providers`)))
	require.NoError(t, err)
	require.Equal(t, "none", strings.TrimSpace(providers))
	lastErr, err := chromedp.Run(bctx, chromedp.Text(css(`tr[data-service="com.shop.B"] td.last-error`)))
	require.NoError(t, err)
	require.Equal(t, "no provider of com.shop.B", strings.TrimSpace(lastErr))
	ok, err := chromedp.Run(bctx, chromedp.Text(css(`tr[data-service="com.shop.A"] td.providers`)))
	require.NoError(t, err)
	require.Equal(t, "2", strings.TrimSpace(ok))
}
