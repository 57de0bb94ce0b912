package bench

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/eventcenter/eventcenter/testsupport/headless"
	"github.com/stretchr/testify/require"
)

func TestCoarseHistQuantiles(t *testing.T) {
	t.Parallel()
	var h coarseHist
	for i := 1; i <= 10000; i++ {
		h.add(time.Duration(i) * time.Microsecond)
	}
	for _, q := range []float64{.5, .9, .99} {
		want := q * 10 // ms
		require.InDelta(t, want, h.quantileMs(q), want*0.07, "q%v", q)
	}
	var empty coarseHist
	require.Zero(t, empty.quantileMs(.5))
}

func TestLatencyPerSecondBuckets(t *testing.T) {
	t.Parallel()
	start := time.Unix(1000, 0)
	l := latPerSecond{start: start}
	l.add(start.Add(200*time.Millisecond), 10*time.Millisecond)
	l.add(start.Add(2500*time.Millisecond), 40*time.Millisecond)
	l.add(start.Add(2600*time.Millisecond), 40*time.Millisecond)
	s := l.summary()
	require.Len(t, s, 3)
	require.EqualValues(t, 1, s[0].Count)
	require.Zero(t, s[1].Count, "a second without forwards")
	require.EqualValues(t, 2, s[2].Count)
	require.InDelta(t, 40, s[2].P99Ms, 3)
}

// svgSeries returns, per svg id, the data-series names of its polylines
// and data-bar names of its bars.
func svgSeries(t *testing.T, svg string) map[string][]string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	out := map[string][]string{}
	id := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if e, ok := tok.(xml.StartElement); ok {
			for _, a := range e.Attr {
				switch {
				case e.Name.Local == "svg" && a.Name.Local == "id":
					id = a.Value
				case a.Name.Local == "data-series", a.Name.Local == "data-bar":
					out[id] = append(out[id], a.Value)
				}
			}
		}
	}
}

// The docs' charts are drawn from a kept report: one SVG document with the
// throughput, backlog, heap and CPU panels.
func TestSVGFromARecordedReport(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("..", "..", "..", "..", "docs", "bench", "2026-11-26-pg-core", "16k-30s-2.json"))
	require.NoError(t, err)
	defer f.Close()
	rep, err := ReadReport(f)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{
		"rate":    {"sent", "forwarded"},
		"backlog": {"backlog"},
		"heap":    {"heap MB"},
		"cpu":     {"this process", "center's PG backends", "all postgres"},
	}, svgSeries(t, rep.SVG()))
	_, err = ReadReport(strings.NewReader("{"))
	require.ErrorContains(t, err, "read bench report")
}

// TestHTMLFromAShortRun runs a short embedded bench, writes its --html
// page and opens it in headless Chromium: no console error, and the charts
// carry their series (latency percentiles per second included).
func TestHTMLFromAShortRun(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Messages = 400
	cfg.Producers = 2
	cfg.Concurrency = 8
	cfg.Partitions = 2
	cfg.DrainTimeout = time.Minute
	cfg.Progress = io.Discard
	rep, err := Run(t.Context(), cfg)
	require.NoError(t, err)
	var n uint64
	for _, s := range rep.Center.LatencyPerSecond {
		n += s.Count
	}
	require.EqualValues(t, rep.Center.Committed, n, "every committed message has its second")

	path := filepath.Join(t.TempDir(), "report.html")
	out, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, rep.WriteHTML(out))
	require.NoError(t, out.Close())

	bctx := headless.Browser(t)
	problems := headless.Problems(t, bctx)
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate("file://"+path),
		chromedp.WaitVisible(chromedp.CSS(`#table`)),
	))
	series, err := chromedp.Run(bctx, chromedp.Evaluate[map[string][]string](`(() => {
		const out = {};
		for (const svg of document.querySelectorAll('svg')) {
			out[svg.id] = [...svg.querySelectorAll('[data-series],[data-bar]')].map(e => e.dataset.series || e.dataset.bar);
		}
		return out;
	})()`))
	require.NoError(t, err)
	require.Equal(t, []string{"sent", "forwarded"}, series["rate"])
	require.Equal(t, []string{"backlog"}, series["backlog"])
	require.Equal(t, []string{"p50", "p90", "p99"}, series["latency"])
	wantCPU := []string{"this process"}
	if rep.CPU.Parts != nil { // absent when a parallel test held the profiler
		wantCPU = append(wantCPU, "  center", "  broker", "  load", "  runtime")
	}
	require.Equal(t, wantCPU, series["cpu"], "SQLite: no PostgreSQL parts")
	require.Equal(t, []string{"center, forwarded", "transport baseline", "store baseline"}, series["baselines"])
	table, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`#table`)))
	require.NoError(t, err)
	require.Contains(t, table, "commit → forward")
	config, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`#config`)))
	require.NoError(t, err)
	require.Contains(t, config, `"messages": 400`)
	require.Empty(t, problems())
}
