package admin

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/admin/trends"
	"github.com/eventcenter/eventcenter/internal/chart"
)

// Trends is what the overview's charts read (admin/trends.Sampler).
type Trends interface {
	// Samples returns the samples of the window, oldest first.
	Samples() []trends.Sample
	// Outcomes returns the check-back outcomes per endpoint of the window.
	Outcomes() []trends.Outcomes
	// Window is how far back the samples go.
	Window() time.Duration
}

// dlqCounter is a DLQ that can count its records (KafkaDLQ).
type dlqCounter interface {
	Count(ctx context.Context) (int64, error)
}

// maxTrendBizIDs bounds the bizIDs drawn on a chart beside the total: the
// ones with the most backlog, then the most forwarded.
const maxTrendBizIDs = 6

// trendView is the overview's trend section.
type trendView struct {
	Window string
	Charts []template.HTML
	// Now holds the latest sample per row ("total" first).
	Now      []trendNow
	Outcomes []trends.Outcomes
}

type trendNow struct {
	Name      string
	Forwarded string
	Backlog   int64
	Oldest    string
}

// dlqView is the overview's dead-letter line.
type dlqView struct {
	Known bool
	N     int64
	// Topics is how many dead-letter topics N sums (one per lane).
	Topics int
	Err    string
}

// dlqCount counts the records of every lane's dead-letter topic that can
// count them, for the overview; nil when none can.
func (h *handler) dlqCount(r *http.Request) *dlqView {
	type counted struct {
		lane string
		c    dlqCounter
	}
	var cs []counted
	if c, ok := h.dlq.(dlqCounter); ok {
		cs = append(cs, counted{"", c})
	}
	for _, l := range h.cfg.LaneDLQs {
		if c, ok := l.DLQ.(dlqCounter); ok {
			cs = append(cs, counted{l.Lane, c})
		}
	}
	if len(cs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	v := &dlqView{Known: true, Topics: len(cs)}
	for _, c := range cs {
		n, err := c.c.Count(ctx)
		if err != nil {
			h.log.Warn("count dead letters for the overview", "lane", c.lane, "err", err)
			what := "could not count"
			if c.lane != "" {
				what += " the dead letters of lane " + c.lane
			}
			return &dlqView{Err: what + ": " + err.Error()}
		}
		v.N += n
	}
	return v
}

// ageTops are the tops of an age axis, in seconds: each and its half
// read as round durations (4m and 2m, not 4m10s and 2m5s).
var ageTops = []float64{1, 2, 4, 10, 20, 30, 60, 120, 240, 600, 1200, 1800, 3600, 7200, 4 * 3600, 12 * 3600, 24 * 3600}

// ageTop rounds an age in seconds up to an axis top (whole days beyond
// ageTops).
func ageTop(v float64) float64 {
	for _, t := range ageTops {
		if v <= t {
			return t
		}
	}
	return math.Ceil(v/(24*3600)) * 24 * 3600
}

// ageLabel formats seconds as an age for a chart's axis, exactly enough
// that its three labels never read alike: "0s", "500ms", "2.5s", "1m40s",
// "1h30m" (roundDur, for tables, truncates: an axis of 0, 0.5 and 1 s read
// "0 / 0s / 1s").
func ageLabel(v float64) string {
	d := time.Duration(v * float64(time.Second))
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		d = d.Round(time.Millisecond)
	case d < time.Minute:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Second)
	}
	s := d.String()
	// 1m0s → 1m, 1h30m0s → 1h30m, 2h0m0s → 2h.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (h *handler) trendView() *trendView {
	if h.cfg.Trends == nil {
		return nil
	}
	window := h.cfg.Trends.Window()
	samples := h.cfg.Trends.Samples()
	now := h.now()
	// The bizIDs to draw: most backlog at the last sample, then most
	// forwarded over the window.
	score := map[string][2]float64{}
	for _, s := range samples {
		for b, v := range s.ByBizID {
			sc := score[b]
			sc[0] = float64(v.Backlog)
			sc[1] += v.Forwarded
			score[b] = sc
		}
	}
	bizIDs := make([]string, 0, len(score))
	for b := range score {
		bizIDs = append(bizIDs, b)
	}
	slices.SortFunc(bizIDs, func(a, b string) int {
		return cmp.Or(cmp.Compare(score[b][0], score[a][0]), cmp.Compare(score[b][1], score[a][1]), cmp.Compare(a, b))
	})
	if len(bizIDs) > maxTrendBizIDs {
		bizIDs = bizIDs[:maxTrendBizIDs]
	}
	slices.Sort(bizIDs)
	xl := func(x float64) string {
		if x >= -1 {
			return "now"
		}
		if -x < 2*3600 {
			return fmt.Sprintf("−%dm", int(math.Round(-x/60)))
		}
		return "−" + roundDur(time.Duration(-x*float64(time.Second)))
	}
	type metric struct {
		id, title string
		val       func(trends.Value) float64
		yl        func(float64) string
		top       float64 // the y axis's least top
		ytop      func(float64) float64
	}
	metrics := []metric{
		{"trend-forwarded", "Forwarded per second", func(v trends.Value) float64 { return v.Forwarded }, nil, 0, nil},
		{"trend-backlog", "Committed, not yet sent", func(v trends.Value) float64 { return float64(v.Backlog) }, nil, 0, nil},
		{"trend-oldest", "Oldest unsent message (age)", func(v trends.Value) float64 { return v.OldestUnsent.Seconds() }, ageLabel, 10, ageTop},
	}
	w := roundDur(window)
	if window == time.Hour {
		w = "hour"
	}
	tv := &trendView{Window: w, Outcomes: h.cfg.Trends.Outcomes()}
	for _, m := range metrics {
		c := chart.Chart{ID: m.id, Title: m.title, Width: 380, Height: 160, XMin: -window.Seconds(), XMax: 0, XLabel: xl, YLabel: m.yl, YMinTop: m.top, YTop: m.ytop}
		total := chart.Series{Name: "total", Color: "#1f2328", Dashed: true}
		per := make([]chart.Series, len(bizIDs))
		for i, b := range bizIDs {
			per[i] = chart.Series{Name: b, Color: chart.Palette[i%len(chart.Palette)]}
		}
		for _, s := range samples {
			x := s.At.Sub(now).Seconds()
			total.Points = append(total.Points, chart.Point{X: x, Y: m.val(s.Total)})
			for i, b := range bizIDs {
				per[i].Points = append(per[i].Points, chart.Point{X: x, Y: m.val(s.ByBizID[b])})
			}
		}
		c.Series = append([]chart.Series{total}, per...)
		// chart.SVG escapes every text it draws.
		tv.Charts = append(tv.Charts, template.HTML(c.SVG()))
	}
	if len(samples) > 0 {
		last := samples[len(samples)-1]
		row := func(name string, v trends.Value) trendNow {
			o := "—"
			if v.Backlog > 0 {
				o = roundDur(v.OldestUnsent)
			}
			return trendNow{Name: name, Forwarded: fmt.Sprintf("%.1f", v.Forwarded), Backlog: v.Backlog, Oldest: o}
		}
		tv.Now = append(tv.Now, row("total", last.Total))
		names := make([]string, 0, len(last.ByBizID))
		for b := range last.ByBizID {
			names = append(names, b)
		}
		slices.Sort(names)
		for _, b := range names {
			tv.Now = append(tv.Now, row(b, last.ByBizID[b]))
		}
	}
	return tv
}
