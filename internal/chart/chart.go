package chart

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Point is one value of a series; X is in the chart's unit (seconds from a
// start, usually).
type Point struct {
	X, Y float64
}

// Series is one line.
type Series struct {
	Name   string
	Points []Point
	// Color is the stroke colour (CSS colour); "" picks the next of Palette.
	Color string
	// Dashed draws the line dashed (a second signal beside the colour).
	Dashed bool
}

// Palette holds the default series colours. Each has a contrast ratio of
// at least 4.5:1 against white, so the legend's coloured text reads too.
var Palette = []string{"#0969da", "#cf222e", "#1a7f37", "#8250df", "#9a6700", "#57606a", "#bf3989", "#0a6b73"}

// Chart is one line chart.
type Chart struct {
	// Title is drawn above the plot and is the SVG's accessible name.
	Title string
	// ID, when set, is the svg element's id.
	ID string
	// Width and Height are the SVG's size in pixels (defaults 360×140).
	Width, Height int
	// XMin and XMax fix the x range; both zero means the data's range.
	XMin, XMax float64
	// XLabel formats an x value for the axis (default %g).
	XLabel func(float64) string
	// YLabel formats a y value for the axis (default: short number).
	YLabel func(float64) string
	// YMin is the bottom of the y axis (default 0); the top is the data's
	// maximum rounded up, at least YMinTop.
	YMin, YMinTop float64
	// YTop, when set, rounds the data's range (top minus YMin, positive)
	// up to the axis's; the default rounds to 1, 2, 2.5 or 5 times a power
	// of ten, which suits counts, not durations (250 s reads 4m10s).
	YTop   func(float64) float64
	Series []Series
}

// Short formats a number with k/M suffixes: 1234 → "1.2k".
func Short(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return trim(strconv.FormatFloat(v/1e6, 'f', 1, 64)) + "M"
	case a >= 1e3:
		return trim(strconv.FormatFloat(v/1e3, 'f', 1, 64)) + "k"
	case a >= 10 || a == math.Trunc(a):
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return trim(strconv.FormatFloat(v, 'f', 2, 64))
}

func trim(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// Layout constants (pixels).
const (
	padLeft   = 44
	padRight  = 8
	padTop    = 22
	padBottom = 34
)

// SVG returns the chart as an <svg> element.
func (c Chart) SVG() string {
	w, h := c.Width, c.Height
	if w <= 0 {
		w = 360
	}
	if h <= 0 {
		h = 140
	}
	xl, yl := c.XLabel, c.YLabel
	if xl == nil {
		xl = func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	}
	if yl == nil {
		yl = Short
	}
	xmin, xmax := c.XMin, c.XMax
	ymax := c.YMinTop
	have := false
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !finite(p.X) || !finite(p.Y) {
				continue
			}
			if c.XMin == 0 && c.XMax == 0 {
				if !have || p.X < xmin {
					xmin = p.X
				}
				if !have || p.X > xmax {
					xmax = p.X
				}
			}
			have = true
			ymax = math.Max(ymax, p.Y)
		}
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	ymin := c.YMin
	top := niceCeil
	if c.YTop != nil {
		top = c.YTop
	}
	ymax = ymin + top(ymax-ymin)
	pw, ph := float64(w-padLeft-padRight), float64(h-padTop-padBottom)
	px := func(x float64) float64 { return padLeft + (x-xmin)/(xmax-xmin)*pw }
	py := func(y float64) float64 { return padTop + ph - (math.Min(math.Max(y, ymin), ymax)-ymin)/(ymax-ymin)*ph }

	var b strings.Builder
	esc := html.EscapeString
	id := ""
	if c.ID != "" {
		id = ` id="` + esc(c.ID) + `"`
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg"%s class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s" font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif" font-size="11">`,
		id, w, h, w, h, esc(c.Title))
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.Title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`, w, h)
	fmt.Fprintf(&b, `<text x="%d" y="14" font-weight="600" font-size="12" fill="#1f2328">%s</text>`, 2, esc(c.Title))
	// Grid: bottom, middle, top, with y labels.
	for i, f := range []float64{0, 0.5, 1} {
		y := ymin + f*(ymax-ymin)
		yy := py(y)
		stroke := "#d0d7de"
		if i == 0 {
			stroke = "#8c959f"
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="1"/>`, padLeft, yy, w-padRight, yy, stroke)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#59636e">%s</text>`, padLeft-4, yy+4, esc(yl(y)))
	}
	// X labels: start, middle, end.
	for i, f := range []float64{0, 0.5, 1} {
		x := xmin + f*(xmax-xmin)
		anchor := []string{"start", "middle", "end"}[i]
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="%s" fill="#59636e">%s</text>`, px(x), h-padBottom+13, anchor, esc(xl(x)))
	}
	// Series and legend.
	lx := float64(padLeft)
	for i, s := range c.Series {
		col := s.Color
		if col == "" {
			col = Palette[i%len(Palette)]
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		var pts strings.Builder
		for _, p := range s.Points {
			if !finite(p.X) || !finite(p.Y) {
				continue
			}
			fmt.Fprintf(&pts, "%.1f,%.1f ", px(p.X), py(p.Y))
		}
		fmt.Fprintf(&b, `<polyline data-series="%s" points="%s" fill="none" stroke="%s" stroke-width="1.6" stroke-linejoin="round"%s/>`,
			esc(s.Name), strings.TrimSpace(pts.String()), col, dash)
		if len(s.Points) == 1 && finite(s.Points[0].X) && finite(s.Points[0].Y) {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s"/>`, px(s.Points[0].X), py(s.Points[0].Y), col)
		}
		ly := float64(h - 6)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`, lx, ly-4, lx+14, ly-4, col, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s">%s</text>`, lx+18, ly, col, esc(s.Name))
		lx += 18 + 6.5*float64(len([]rune(s.Name))) + 14
	}
	if !have {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#59636e">no samples yet</text>`, padLeft+pw/2, padTop+ph/2)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
