package admin_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/admin/trends"
	"github.com/eventcenter/eventcenter/testsupport/headless"
)

// countingDLQ is a dead-letter topic that can only count (the overview
// asks nothing else).
type countingDLQ struct {
	admin.DLQ
	n int64
}

func (d countingDLQ) Count(context.Context) (int64, error) { return d.n, nil }

// seedTrends fills a sampler with an hour of samples every 5 s: orders
// forwards about 120/s and builds a backlog from 40 to 25 minutes ago,
// pay forwards about 30/s; and some check-back outcomes.
func seedTrends(now time.Time) *trends.Sampler {
	s := trends.New(trends.Config{Now: func() time.Time { return now }}, nil)
	const n = 720
	for i := range n {
		at := now.Add(-time.Duration(n-1-i) * 5 * time.Second)
		ago := now.Sub(at).Minutes()
		wave := math.Sin(float64(i) / 9)
		orders := trends.Value{Forwarded: 120 + 15*wave}
		if ago <= 40 && ago >= 25 {
			f := (40 - ago) / 15 // 0 → 1 over the bump
			orders.Backlog = int64(4000 * math.Sin(f*math.Pi))
			orders.OldestUnsent = time.Duration(30+200*math.Sin(f*math.Pi)) * time.Second
			orders.Forwarded = 60 + 10*wave
		} else {
			orders.Backlog = int64(20 + 10*wave)
			orders.OldestUnsent = time.Duration(1.5*float64(time.Second)) + time.Duration(wave*float64(time.Second)/2)
		}
		pay := trends.Value{Forwarded: 30 + 5*math.Cos(float64(i)/7), Backlog: int64(5 + 3*wave), OldestUnsent: time.Second}
		total := trends.Value{Forwarded: orders.Forwarded + pay.Forwarded, Backlog: orders.Backlog + pay.Backlog,
			OldestUnsent: max(orders.OldestUnsent, pay.OldestUnsent)}
		s.Record(trends.Sample{At: at, ByBizID: map[string]trends.Value{"orders": orders, "pay": pay}, Total: total})
	}
	add := func(ep, outcome string, k int) {
		for range k {
			s.RecordOutcome(now.Add(-10*time.Minute), ep, outcome)
		}
	}
	add("http://orders-svc:8080/checkback", trends.Commit, 1180)
	add("http://orders-svc:8080/checkback", trends.Rollback, 42)
	add("http://orders-svc:8080/checkback", trends.Unknown, 3)
	add("tri://pay-svc:50051/com.example.TxChecker/verifyMessage", trends.Commit, 310)
	add("tri://pay-svc:50051/com.example.TxChecker/verifyMessage", trends.Rollback, 12)
	add("tri://pay-svc:50051/com.example.TxChecker/verifyMessage", trends.Unknown, 9)
	add("tri://pay-svc:50051/com.example.TxChecker/verifyMessage", trends.Failed, 5)
	return s
}

// TestBrowserTrends renders the overview's charts from seeded samples in
// headless Chromium: three charts with the total and each bizID as
// series, the dead-letter count with its link, the check-back outcomes per
// endpoint, and no console error (the page runs no script: the CSP allows
// none). With EVENTCENTER_SCREENSHOT=1 it saves docs/console.png.
func TestBrowserTrends(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, countingDLQ{n: 7}, func(c *admin.Config) {
		c.Insecure, c.Tokens = true, nil
		c.Trends = seedTrends(c.Now())
	})
	bctx := headless.Browser(t)
	problems := headless.Problems(t, bctx)
	// Insecure mode answers loopback names only.
	base := strings.Replace(env.Server.URL, "127.0.0.1", "localhost", 1)
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`#trends`)),
	))
	series, err := chromedp.Run(bctx, chromedp.Evaluate[map[string][]string](`(() => {
		const out = {};
		for (const svg of document.querySelectorAll('#trends svg')) {
			out[svg.id] = [...svg.querySelectorAll('polyline')].map(p => p.dataset.series + ':' + p.getAttribute('points').trim().split(/\s+/).length);
		}
		return out;
	})()`))
	require.NoError(t, err)
	want := []string{"total:720", "orders:720", "pay:720"}
	require.Equal(t, map[string][]string{"trend-forwarded": want, "trend-backlog": want, "trend-oldest": want}, series)

	dl, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`#deadletters a`)))
	require.NoError(t, err)
	require.Equal(t, "7 records in the dead-letter topic", strings.TrimSpace(dl))
	href, err := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.CSS(`#deadletters a`), "href"))
	require.NoError(t, err)
	require.Equal(t, "/ui/dlq", href.Value)

	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#outcomes tbody tr')].map(r => [...r.cells].map(c => c.textContent.trim()).join('|'))`))
	require.NoError(t, err)
	require.Equal(t, []string{
		"http://orders-svc:8080/checkback|1180|42|3|0",
		"tri://pay-svc:50051/com.example.TxChecker/verifyMessage|310|12|9|5",
	}, rows)
	badge, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`header .badge.insecure`)))
	require.NoError(t, err)
	require.Equal(t, "insecure mode", strings.TrimSpace(badge))

	if os.Getenv("EVENTCENTER_SCREENSHOT") == "1" {
		// The first screen (1280×900), as an operator opens it.
		png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		out := filepath.Join("..", "docs", "console.png")
		require.NoError(t, os.WriteFile(out, png, 0o644))
		t.Logf("saved %s (%d bytes)", out, len(png))
	}
	require.Empty(t, problems())
}
