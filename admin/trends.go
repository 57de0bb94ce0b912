package admin

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
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

// ageLabel formats seconds as a short age.
func ageLabel(v float64) string {
	if v <= 0 {
		return "0"
	}
	return roundDur(time.Duration(v * float64(time.Second)))
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
	}
	metrics := []metric{
		{"trend-forwarded", "Forwarded per second", func(v trends.Value) float64 { return v.Forwarded }, nil},
		{"trend-backlog", "Committed, not yet sent", func(v trends.Value) float64 { return float64(v.Backlog) }, nil},
		{"trend-oldest", "Oldest unsent message (age)", func(v trends.Value) float64 { return v.OldestUnsent.Seconds() }, ageLabel},
	}
	w := roundDur(window)
	if window == time.Hour {
		w = "hour"
	}
	tv := &trendView{Window: w, Outcomes: h.cfg.Trends.Outcomes()}
	for _, m := range metrics {
		c := chart.Chart{ID: m.id, Title: m.title, Width: 380, Height: 160, XMin: -window.Seconds(), XMax: 0, XLabel: xl, YLabel: m.yl}
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
