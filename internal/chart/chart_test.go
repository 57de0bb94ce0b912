package chart_test

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/internal/chart"
)

func TestContrast(t *testing.T) {
	t.Parallel()
	c, err := chart.Contrast("#000", "#fff")
	require.NoError(t, err)
	require.InDelta(t, 21.0, c, 1e-9)
	c, err = chart.Contrast("#777777", "#ffffff")
	require.NoError(t, err)
	require.InDelta(t, 4.48, c, 0.01) // the classic just-fails grey
	_, err = chart.Contrast("red", "#fff")
	require.Error(t, err)
}

// Every text a chart draws reads on its white background (WCAG AA).
func TestChartColoursMeetAA(t *testing.T) {
	t.Parallel()
	for _, col := range append([]string{"#1f2328", "#59636e"}, chart.Palette...) {
		c, err := chart.Contrast(col, "#ffffff")
		require.NoError(t, err)
		require.GreaterOrEqual(t, c, 4.5, col)
	}
}

func TestSVGIsWellFormedWithSeriesAndEscapes(t *testing.T) {
	t.Parallel()
	c := chart.Chart{ID: "x", Title: `a <b> & "c"`, XMin: -60, XMax: 0, Series: []chart.Series{
		{Name: "total", Points: []chart.Point{{X: -60, Y: 0}, {X: -30, Y: 120}, {X: 0, Y: 80}}},
		{Name: "<orders>", Points: []chart.Point{{X: -30, Y: 10}}},
	}}
	svg := c.SVG()
	dec := xml.NewDecoder(strings.NewReader(svg))
	series := map[string]string{}
	texts := []string{}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, svg)
		switch e := tok.(type) {
		case xml.StartElement:
			if e.Name.Local == "polyline" {
				var name, pts string
				for _, a := range e.Attr {
					switch a.Name.Local {
					case "data-series":
						name = a.Value
					case "points":
						pts = a.Value
					}
				}
				series[name] = pts
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(e)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	require.Len(t, series, 2)
	require.Len(t, strings.Fields(series["total"]), 3)
	require.Len(t, strings.Fields(series["<orders>"]), 1)
	require.Contains(t, texts, `a <b> & "c"`)
	require.Contains(t, texts, "200", "the y axis is rounded up to a nice top")
	require.NotContains(t, svg, "<orders>", "names are escaped")
}

func TestSVGWithoutSamples(t *testing.T) {
	t.Parallel()
	svg := chart.Chart{Title: "empty", Series: []chart.Series{{Name: "total"}}}.SVG()
	require.Contains(t, svg, "no samples yet")
	require.NotContains(t, svg, "NaN")
}

func TestShort(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{0: "0", 5: "5", 2.5: "2.5", 12.34: "12", 1234: "1.2k", 20000: "20k", 2.5e6: "2.5M"} {
		require.Equal(t, want, chart.Short(in), "%v", in)
	}
}
