package admin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/testsupport/headless"
)

// TestBrowserResolve drives the console in headless Chromium: log in, find
// the VERIFY_FAILED message on the overview, resolve it as commit with a
// reason, and check that the forwarder got it. With EVENTCENTER_SCREENSHOT=1
// it saves the message page to docs/console-message.png (TestBrowserTrends
// saves the overview).
func TestBrowserResolve(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil)

	bctx := headless.Browser(t)

	base := env.Server.URL
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	require.NoError(t, chromedp.Do(bctx, signIn(base, admintest.AdminToken)))

	// Search for it, open it from the VERIFY_FAILED list, resolve it.
	vf := css(`a[href="/ui/m/orders/vf:1%2Fx"]`)
	require.NoError(t, chromedp.Do(bctx,
		chromedp.SendKeys(css(`#search input[name="key"]`), "vf:1"),
		chromedp.Submit(css(`#search input[name="key"]`)),
		// The filtered page no longer lists the DEAD message.
		chromedp.WaitNotPresent(css(`a[href="/ui/m/pay/p-dead"]`)),
		chromedp.WaitVisible(vf),
		chromedp.Click(vf),
		chromedp.WaitVisible(css(`#resolve-form`)),
	))
	screenshot(t, bctx, "console-message.png")
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Click(css(`#resolve-form input[value="commit"]`)),
		chromedp.SendKeys(css(`#resolve-form textarea[name="reason"]`), "shop confirmed payment by phone"),
		chromedp.Submit(css(`#resolve-form textarea[name="reason"]`)),
		chromedp.WaitVisible(css(`.flash.ok`)),
	))
	flash, err := chromedp.Run(bctx, chromedp.Text(css(`.flash.ok`)))
	require.NoError(t, err)
	status, err := chromedp.Run(bctx, chromedp.Text(css(`#status`)))
	require.NoError(t, err)
	require.Equal(t, "Resolved as commit. Handed to the forwarder.", strings.TrimSpace(flash))
	require.Equal(t, "COMMITTED", strings.TrimSpace(status))

	select {
	case <-env.Handoff.C:
	case <-bctx.Done():
		t.Fatal("the forwarder did not get the resolved message")
	}
	handed := env.Handoff.Messages()
	require.Len(t, handed, 1)
	require.Equal(t, admintest.KeyVF, handed[0].Key)
	audit, err := env.Store.Audit(t.Context(), admintest.Biz, admintest.KeyVF)
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Equal(t, admintest.AdminName, audit[0].Who)
	require.Equal(t, "shop confirmed payment by phone", audit[0].Reason)
}

// screenshot saves the page to docs/<name> when EVENTCENTER_SCREENSHOT=1.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("EVENTCENTER_SCREENSHOT") != "1" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	out := filepath.Join("..", "docs", name)
	require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
	require.NoError(t, os.WriteFile(out, png, 0o644))
	t.Logf("saved %s (%d bytes)", out, len(png))
}

// signIn opens the console at base, is sent to the login form, signs in
// with token and waits for the overview (its search form).
func signIn(base, token string) chromedp.Action[chromedp.Void] {
	field := chromedp.CSS(`input[name="token"]`)
	return chromedp.Steps(
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(field),
		chromedp.SendKeys(field, token),
		chromedp.Submit(field),
		chromedp.WaitVisible(chromedp.CSS(`#search`)),
	)
}
