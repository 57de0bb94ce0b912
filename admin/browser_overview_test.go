package admin_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/testsupport/headless"
)

// The overview fits a 1280-pixel window, as an operator with an admin
// token sees it (every bizID row with its "Retry all" form, the trends, a
// bizID in each status with counts in the thousands): no horizontal
// scroll, and no control cut off.
func TestBrowserOverviewFits1280(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, countingDLQ{n: 7}, func(c *admin.Config) {
		c.Trends = seedTrends(c.Now())
	})
	ctx := t.Context()
	// A long bizID, and one in every status.
	for i, k := range []state.Kind{state.KindPrepare, state.KindCommit, state.KindRollback, state.KindCancel} {
		key := fmt.Sprintf("wide-%d", i)
		_, err := env.Store.Apply(ctx, store.ApplyRequest{Changes: []store.Change{{
			BizID: "payments-settlement-eu", Key: key, Partition: 1, Event: state.Event{Kind: state.KindPrepare, At: env.Clock.Now(),
				Body: &state.Body{Topic: "settlements", CheckAfter: time.Hour}}}}})
		require.NoError(t, err)
		if k != state.KindPrepare {
			_, err = env.Store.Apply(ctx, store.ApplyRequest{Changes: []store.Change{{
				BizID: "payments-settlement-eu", Key: key, Partition: 1, Event: state.Event{Kind: k, At: env.Clock.Now()}}}})
			require.NoError(t, err)
		}
	}

	bctx := headless.Browser(t)
	problems := headless.Problems(t, bctx)
	require.NoError(t, chromedp.Do(bctx, signIn(env.Server.URL, admintest.AdminToken)))
	type fit struct {
		Inner, Scroll int
		Clipped       []string
	}
	// Measured with every row's "Retry all…" open, as when it is used.
	got, err := chromedp.Run(bctx, chromedp.Evaluate[fit](`(() => {
		for (const d of document.querySelectorAll('main details')) d.open = true;
		const clipped = [];
		for (const el of document.querySelectorAll('main button, main input, main a, main th, main td')) {
			const r = el.getBoundingClientRect();
			if (r.width === 0) continue;
			const cut = r.right > window.innerWidth + 0.5 || (el.tagName === 'BUTTON' && el.scrollWidth > el.clientWidth + 1);
			if (cut) clipped.push(el.tagName + ' "' + (el.textContent || el.placeholder || '').trim().slice(0, 40) + '" right=' + Math.round(r.right));
		}
		return {Inner: window.innerWidth, Scroll: document.documentElement.scrollWidth, Clipped: clipped};
	})()`))
	require.NoError(t, err)
	require.Equal(t, 1280, got.Inner, "the window")
	require.LessOrEqual(t, got.Scroll, got.Inner, "the overview scrolls sideways at 1280 px; cut: %s", strings.Join(got.Clipped, "; "))
	require.Empty(t, got.Clipped)
	// Room to spare: the tables' narrowest layout leaves a margin for a
	// longer bizID or another column.
	minw, err := chromedp.Run(bctx, chromedp.Evaluate[int](`(() => {
		let m = 0;
		for (const t of document.querySelectorAll('main table')) {
			const w = t.style.width;
			t.style.width = 'min-content';
			m = Math.max(m, t.getBoundingClientRect().width);
			t.style.width = w;
		}
		return Math.round(m);
	})()`))
	require.NoError(t, err)
	require.Less(t, minw, got.Inner-48-60, "the narrowest overview table leaves less than 60 px in a 1280 px window")
	buttons, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('form[action$="/retry"] button')].map(b => b.textContent.trim())`))
	require.NoError(t, err)
	require.Equal(t, []string{"Retry all", "Retry all", "Retry all"}, buttons, "every bizID row has its retry form")
	require.Empty(t, problems())
}
