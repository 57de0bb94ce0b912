package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/testsupport/headless"
)

// TestConsoleResolvesVerifyFailed drives the center's web console in
// headless Chromium: an operator logs in, finds a VERIFY_FAILED message,
// resolves it as commit with a reason, and the message is forwarded.
func TestConsoleResolvesVerifyFailed(t *testing.T) {
	t.Parallel()
	headless.Chromium(t) // skip (or fail in CI) before starting anything
	const token = "ops-token-0123456789abcdef"
	e := newEnv(t, "sqlite", func(c *config.Config) {
		c.Admin.Insecure = false
		c.Admin.Tokens = []config.Token{{Name: "alice", Token: token, Scope: "admin"}}
		c.Checkback.FirstDelay = 50 * time.Millisecond
		c.Checkback.Allow = []string{"http://127.0.0.1:1"}
	})
	c := e.startCenter(center.Options{})
	col := e.collect(businessTopic)
	// The PREPARE names an endpoint nobody allowed: parked as VERIFY_FAILED.
	produceEnvelope(t, e.raw(), envelope.Envelope{Type: envelope.Prepare, BizID: "orders", MessageKey: "console-1",
		Payload: []byte("payload-console-1"), ForwardTopic: businessTopic, ForwardKey: "fk-console-1",
		Headers: []envelope.Header{{Key: "trace", Value: []byte("t-console-1")}}, Verify: "http://10.1.2.3:8080/check"})
	require.Eventually(t, func() bool {
		m, err := c.Store.Get(t.Context(), "orders", "console-1")
		return err == nil && m.Status == state.VerifyFailed
	}, 30*time.Second, 20*time.Millisecond)

	bctx := headless.Browser(t)

	base := "http://" + c.Addr()
	link := chromedp.CSS(`a[href="/ui/m/orders/console-1"]`)
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), token),
		chromedp.Submit(chromedp.CSS(`input[name="token"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#search`)),
		chromedp.SendKeys(chromedp.CSS(`#search input[name="key"]`), "console-1"),
		chromedp.Submit(chromedp.CSS(`#search input[name="key"]`)),
		chromedp.WaitVisible(link),
		chromedp.Click(link),
		chromedp.WaitVisible(chromedp.CSS(`#resolve-form`)),
		chromedp.Click(chromedp.CSS(`#resolve-form input[value="commit"]`)),
		chromedp.SendKeys(chromedp.CSS(`#resolve-form textarea[name="reason"]`), "payment confirmed with the shop"),
		chromedp.Submit(chromedp.CSS(`#resolve-form textarea[name="reason"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash.ok`)),
	), "console flow")
	status, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`#status`)))
	require.NoError(t, err)
	require.Equal(t, "COMMITTED", strings.TrimSpace(status))

	col.waitFor(t, []string{"orders:console-1"}, 30*time.Second)
	checkForwarded(t, col, plan{committed: []string{"orders:console-1"}})
	audit, err := c.Store.Audit(t.Context(), "orders", "console-1")
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Equal(t, "alice", audit[0].Who)
	require.Equal(t, "payment confirmed with the shop", audit[0].Reason)
}
