package bench

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/eventcenter/eventcenter/internal/chart"
)

// ReadReport reads a report written by WriteJSON.
func ReadReport(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("read bench report: %w", err)
	}
	return &r, nil
}

// secondsLabel writes seconds from the first send: "12s", "0.5s", "5m".
func secondsLabel(v float64) string {
	if v >= 120 {
		return strconv.FormatFloat(math.Round(v/6)/10, 'f', -1, 64) + "m"
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + "s"
}

// Charts returns the report's charts over the run, each w pixels wide:
// sent and forwarded per second, the backlog (sent, not yet forwarded),
// the commit-to-forward latency percentiles per second (reports written
// before they were kept have none) and the heap.
func (r *Report) Charts(w int) []chart.Chart {
	x := r.Center
	pts := func(vs []int64) []chart.Point {
		out := make([]chart.Point, len(vs))
		for i, v := range vs {
			out[i] = chart.Point{X: float64(i), Y: float64(v)}
		}
		return out
	}
	cs := []chart.Chart{{
		ID: "rate", Title: "Sent and forwarded per second", Width: w, Height: 180, XLabel: secondsLabel,
		Series: []chart.Series{
			{Name: "sent", Points: pts(x.SentPerSecond), Color: "#57606a", Dashed: true},
			{Name: "forwarded", Points: pts(x.ForwardedPerSecond), Color: "#0969da"},
		},
	}}
	var backlog []chart.Point
	var cum int64
	for i := range max(len(x.SentPerSecond), len(x.ForwardedPerSecond)) {
		if i < len(x.SentPerSecond) {
			cum += x.SentPerSecond[i]
		}
		if i < len(x.ForwardedPerSecond) {
			cum -= x.ForwardedPerSecond[i]
		}
		backlog = append(backlog, chart.Point{X: float64(i + 1), Y: float64(max(cum, 0))})
	}
	cs = append(cs, chart.Chart{ID: "backlog", Title: "Backlog: sent, not yet forwarded (end of each second)", Width: w, Height: 160,
		XLabel: secondsLabel, Series: []chart.Series{{Name: "backlog", Points: backlog, Color: "#9a6700"}}})
	if len(x.LatencyPerSecond) > 0 {
		var p50, p90, p99 []chart.Point
		for i, l := range x.LatencyPerSecond {
			if l.Count == 0 {
				continue
			}
			p50 = append(p50, chart.Point{X: float64(i), Y: l.P50Ms})
			p90 = append(p90, chart.Point{X: float64(i), Y: l.P90Ms})
			p99 = append(p99, chart.Point{X: float64(i), Y: l.P99Ms})
		}
		cs = append(cs, chart.Chart{ID: "latency", Title: "Commit → forward latency per second (ms)", Width: w, Height: 180, XLabel: secondsLabel,
			Series: []chart.Series{{Name: "p50", Points: p50, Color: "#1a7f37"}, {Name: "p90", Points: p90, Color: "#9a6700"}, {Name: "p99", Points: p99, Color: "#cf222e"}}})
	}
	if len(x.HeapSamples) > 0 {
		var heap []chart.Point
		for _, h := range x.HeapSamples {
			heap = append(heap, chart.Point{X: h.Seconds, Y: h.MB})
		}
		cs = append(cs, chart.Chart{ID: "heap", Title: "Heap in use after GC (MB)", Width: w, Height: 140, XLabel: secondsLabel,
			Series: []chart.Series{{Name: "heap MB", Points: heap, Color: "#8250df"}}})
	}
	return cs
}

// cpuBars is the CPU time per forwarded message by part, as the report
// measured it (nil without CPU accounting).
func (r *Report) cpuBars(w int) *chart.Bars {
	u := r.CPU
	if u == nil {
		return nil
	}
	us := func(v float64) string { return fmt.Sprintf("%.0f µs", v) }
	b := &chart.Bars{ID: "cpu", Title: "CPU per forwarded message, by part", Width: w, Bars: []chart.Bar{
		{Label: "this process", Value: u.ProcessUsPerMsg, Text: us(u.ProcessUsPerMsg), Color: "#0969da"},
	}}
	if p := u.Parts; p != nil && len(p.UsPerMsg) > 0 {
		colors := map[string]string{"center": "#8250df", "broker": "#bc4c00", "load": "#6e7781", "runtime": "#afb8c1"}
		for _, k := range []string{"center", "broker", "load", "runtime"} {
			b.Bars = append(b.Bars, chart.Bar{Label: "  " + k, Value: p.UsPerMsg[k], Text: us(p.UsPerMsg[k]), Color: colors[k]})
		}
	}
	if u.PostgresBackendsSeconds > 0 || u.PostgresAllSeconds > 0 {
		b.Bars = append(b.Bars,
			chart.Bar{Label: "center's PG backends", Value: u.PostgresBackendsUsPerMsg, Text: us(u.PostgresBackendsUsPerMsg), Color: "#1a7f37"},
			chart.Bar{Label: "all postgres", Value: u.PostgresAllUsPerMsg, Text: us(u.PostgresAllUsPerMsg), Color: "#57606a"})
	}
	return b
}

// baselineBars compares the center's forwarded rate with the baselines.
func (r *Report) baselineBars(w int) *chart.Bars {
	if r.Transport == nil && r.Store == nil {
		return nil
	}
	ps := func(v float64) string { return fmt.Sprintf("%.0f msg/s", v) }
	b := &chart.Bars{ID: "baselines", Title: "Center against its baselines", Width: w, Bars: []chart.Bar{
		{Label: "center, forwarded", Value: r.Center.ForwardRate, Text: ps(r.Center.ForwardRate), Color: "#0969da"},
	}}
	if t := r.Transport; t != nil {
		b.Bars = append(b.Bars, chart.Bar{Label: "transport baseline", Value: t.PerSecond, Text: ps(t.PerSecond), Color: "#57606a"})
	}
	if s := r.Store; s != nil {
		b.Bars = append(b.Bars, chart.Bar{Label: "store baseline", Value: s.PerSecond, Text: ps(s.PerSecond), Color: "#8250df"})
	}
	return b
}

// SVG returns the report's charts stacked in one SVG document (what
// "ectools bench-chart" writes for docs/).
func (r *Report) SVG() string {
	const w = 720
	var parts []string
	var heights []int
	for _, c := range r.Charts(w) {
		parts, heights = append(parts, c.SVG()), append(heights, c.Height)
	}
	if b := r.cpuBars(w); b != nil {
		parts, heights = append(parts, b.SVG()), append(heights, 24+22*len(b.Bars)+6)
	}
	return chart.Stack(w, "eventcenter bench "+r.RunID, parts, heights)
}

// WriteHTML writes the report as one self-contained page: inline CSS and
// SVG, no script, nothing fetched.
func (r *Report) WriteHTML(w io.Writer) error {
	var table strings.Builder
	if err := r.WriteTable(&table); err != nil {
		return err
	}
	cfg, err := json.MarshalIndent(r.Config, "", "  ")
	if err != nil {
		return fmt.Errorf("bench report config: %w", err)
	}
	svg := func(s string) template.HTML { return template.HTML(s) } // chart escapes what it draws
	var charts []template.HTML
	for _, c := range r.Charts(560) {
		charts = append(charts, svg(c.SVG()))
	}
	var bars []template.HTML
	for _, b := range []*chart.Bars{r.cpuBars(560), r.baselineBars(560)} {
		if b != nil {
			bars = append(bars, svg(b.SVG()))
		}
	}
	return htmlPage.Execute(w, map[string]any{
		"R": r, "Charts": charts, "Bars": bars, "Table": table.String(), "Config": string(cfg),
	})
}

var htmlPage = template.Must(template.New("bench").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>eventcenter bench {{.R.RunID}}</title>
<style>
body{margin:0;padding:1rem 1.5rem;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;background:#fff;max-width:1200px}
h1{font-size:20px;margin:.2rem 0 .8rem}
h2{font-size:16px;margin:1.4rem 0 .5rem}
.figures{display:flex;flex-wrap:wrap;gap:1rem;margin:.5rem 0}
.figure{border:1px solid #d0d7de;border-radius:6px;padding:.5rem .8rem;background:#f6f8fa;color:#1f2328}
.figure b{display:block;font-size:20px}
.charts{display:flex;flex-wrap:wrap;gap:.8rem}
figure{margin:0;border:1px solid #d0d7de;border-radius:6px;padding:.3rem;background:#fff;color:#1f2328}
figure svg{display:block;max-width:100%;height:auto}
pre{background:#f6f8fa;color:#1f2328;border:1px solid #d0d7de;padding:.6rem;overflow:auto;font-size:12.5px}
.muted{color:#59636e}
</style>
</head>
<body>
<h1>eventcenter bench <span class="muted">{{.R.RunID}}</span></h1>
<div class="figures">
<div class="figure" id="fig-forward"><b>{{printf "%.0f" .R.Center.ForwardRate}} msg/s</b>forwarded</div>
<div class="figure"><b>{{printf "%.1f" .R.Center.CommitToForward.P50Ms}} / {{printf "%.1f" .R.Center.CommitToForward.P99Ms}} ms</b>commit → forward p50 / p99</div>
<div class="figure"><b>{{.R.Center.Forwarded}}</b>forwarded ({{.R.Center.Missing}} missing, {{.R.Center.Duplicates}} duplicates)</div>
{{if .R.RatioOf}}<div class="figure"><b>{{printf "%.2f" .R.Ratio}}</b>of the {{.R.RatioOf}} baseline</div>{{end}}
</div>
<h2>Over the run</h2>
<div class="charts">{{range .Charts}}<figure>{{.}}</figure>{{end}}</div>
{{if .Bars}}<h2>CPU and baselines</h2>
<div class="charts">{{range .Bars}}<figure>{{.}}</figure>{{end}}</div>{{end}}
<h2>Report</h2>
<pre id="table">{{.Table}}</pre>
<h2>Configuration</h2>
<pre id="config">{{.Config}}</pre>
<p class="muted">Written by ectools bench --html; the same run's JSON (--json) holds every figure.</p>
</body>
</html>
`))
