package chart

import (
	"fmt"
	"html"
	"strings"
)

// Bar is one bar of a bar chart.
type Bar struct {
	Label string
	Value float64
	// Text is written after the bar (default: Short(Value)).
	Text  string
	Color string
}

// Bars is a horizontal bar chart: one labelled bar per row, its value
// written beside it (the length is never the only way to read it).
type Bars struct {
	Title string
	ID    string
	Width int // default 360
	Bars  []Bar
}

// SVG returns the bar chart as an <svg> element.
func (c Bars) SVG() string {
	w := c.Width
	if w <= 0 {
		w = 360
	}
	const row, top, label = 22, 24, 150
	h := top + row*len(c.Bars) + 6
	vmax := 0.0
	for _, b := range c.Bars {
		vmax = max(vmax, b.Value)
	}
	if vmax <= 0 {
		vmax = 1
	}
	esc := html.EscapeString
	var b strings.Builder
	id := ""
	if c.ID != "" {
		id = ` id="` + esc(c.ID) + `"`
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg"%s class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s" font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif" font-size="11">`,
		id, w, h, w, h, esc(c.Title))
	fmt.Fprintf(&b, `<title>%s</title><rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`, esc(c.Title), w, h)
	fmt.Fprintf(&b, `<text x="2" y="14" font-weight="600" font-size="12" fill="#1f2328">%s</text>`, esc(c.Title))
	bw := float64(w - label - 110) // room for the value's text
	for i, bar := range c.Bars {
		y := top + i*row
		col := bar.Color
		if col == "" {
			col = Palette[i%len(Palette)]
		}
		txt := bar.Text
		if txt == "" {
			txt = Short(bar.Value)
		}
		l := max(bar.Value, 0) / vmax * bw
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" fill="#1f2328">%s</text>`, label-6, y+13, esc(bar.Label))
		fmt.Fprintf(&b, `<rect data-bar="%s" x="%d" y="%d" width="%.1f" height="14" fill="%s"/>`, esc(bar.Label), label, y+2, l, col)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#1f2328">%s</text>`, float64(label)+l+4, y+13, esc(txt))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// Stack puts SVG elements (of the given heights) under each other in one
// SVG document of width w: a chart file with several panels.
func Stack(w int, title string, parts []string, heights []int) string {
	total := 0
	for _, h := range heights {
		total += h + 8
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		w, total, w, total, html.EscapeString(title))
	fmt.Fprintf(&b, `<title>%s</title><rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`, html.EscapeString(title), w, total)
	y := 0
	for i, p := range parts {
		fmt.Fprintf(&b, `<g transform="translate(0,%d)">%s</g>`, y, p)
		y += heights[i] + 8
	}
	b.WriteString(`</svg>`)
	return b.String()
}
