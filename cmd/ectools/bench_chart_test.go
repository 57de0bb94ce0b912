package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// bench-chart draws a kept report as the SVG docs/performance.md shows,
// and the --html page from the same report.
func TestBenchChart(t *testing.T) {
	report := filepath.Join("..", "..", "docs", "bench", "2026-11-26-pg-core", "16k-30s-2.json")
	_, err := run(t, "bench-chart", report)
	require.ErrorContains(t, err, "-o or --html is required")
	_, err = run(t, "bench-chart", filepath.Join(t.TempDir(), "missing.json"), "-o", "x.svg")
	require.ErrorContains(t, err, "no such file")

	dir := t.TempDir()
	svg, page := filepath.Join(dir, "c.svg"), filepath.Join(dir, "c.html")
	out, err := run(t, "bench-chart", report, "-o", svg, "--html", page)
	require.NoError(t, err, out)
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.Contains(t, string(b), `<polyline data-series="forwarded"`)
	require.Contains(t, string(b), `<rect data-bar="center&#39;s PG backends"`)
	h, err := os.ReadFile(page)
	require.NoError(t, err)
	require.Contains(t, string(h), `<svg xmlns="http://www.w3.org/2000/svg" id="rate"`)
	require.NotContains(t, string(h), "<script")

	// The docs' charts are what the command draws from the kept reports.
	for chart, rep := range map[string]string{
		"pg-16k-30s.svg": "2026-11-26-pg-core/16k-30s-2.json",
		"pg-10m-9k.svg":  "2026-11-26-pg-core/10m-9k-autovacuum.json",
	} {
		fresh := filepath.Join(dir, chart)
		_, err := run(t, "bench-chart", filepath.Join("..", "..", "docs", "bench", filepath.FromSlash(rep)), "-o", fresh)
		require.NoError(t, err)
		want, err := os.ReadFile(fresh)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join("..", "..", "docs", "img", chart))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "docs/img/%s is stale: regenerate it (see docs/performance.md)", chart)
	}
}
