package admin

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/internal/chart"
)

// The age axis's labels say what they mark: never two alike, never a bare
// 0 beside "0s" (an axis of 0, 0.5 and 1 s read "0 / 0s / 1s").
func TestAgeAxisLabels(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0s", -1: "0s", 0.5: "500ms", 1: "1s", 2.5: "2.5s", 45: "45s",
		100: "1m40s", 60: "1m", 3600: "1h", 5400: "1h30m", 7260: "2h1m", 7261: "2h1m1s",
	} {
		require.Equal(t, want, ageLabel(v), "ageLabel(%g)", v)
	}
	yLabel := regexp.MustCompile(`<text x="40" y="[0-9.]+" text-anchor="end" fill="#59636e">([^<]*)</text>`)
	for _, top := range []float64{0, 0.3, 0.9, 1.5, 7, 45, 150, 249, 3000, 5400, 40000, 200000} {
		c := chart.Chart{Title: "Oldest unsent message (age)", YLabel: ageLabel, YMinTop: 10, YTop: ageTop,
			Series: []chart.Series{{Name: "total", Points: []chart.Point{{X: -60, Y: 0}, {X: 0, Y: top}}}}}
		var labels []string
		for _, m := range yLabel.FindAllStringSubmatch(c.SVG(), -1) {
			labels = append(labels, m[1])
		}
		require.Len(t, labels, 3, "top %g", top)
		require.Equal(t, "0s", labels[0], "top %g", top)
		require.NotEqual(t, labels[0], labels[1], "top %g: %v", top, labels)
		require.NotEqual(t, labels[1], labels[2], "top %g: %v", top, labels)
		for _, l := range labels {
			require.NotRegexp(t, `[0-9]+m[0-9]+s|[0-9]h[0-9]+m|\.`, l, "top %g: %v, not a round duration", top, labels)
		}
	}
}
