// Package chart draws small line charts as self-contained SVG text: no
// script, no external style sheet, no fonts to fetch. The console's
// overview trends and the bench report (ectools bench --html and
// bench-chart) share it, so a chart in docs/ is drawn by the same code as
// the one an operator sees.
//
// Every series is a polyline with a data-series attribute naming it, and
// the chart carries a <title> and a text legend: the colour is never the
// only thing that tells the series apart.
package chart
