package benchcompare

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteTable writes the comparison as a Markdown table: per run and
// metric, each build's median with the values behind it, the ratio new ÷
// old and the verdict.
func (r *Result) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "old: %s\nnew: %s\n", describe(r.Old), describe(r.New))
	fmt.Fprintf(&b, "%d alternated pairs per run", r.Pairs)
	if len(r.Args) > 0 {
		fmt.Fprintf(&b, ", bench arguments %s", strings.Join(r.Args, " "))
	}
	fmt.Fprintf(&b, "; took %s\n\n", r.Took)
	b.WriteString("| run | metric | old: median (runs) | new: median (runs) | new ÷ old | |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, rr := range r.Runs {
		if note := sideNote(rr); note != "" {
			fmt.Fprintf(&b, "| %s | %s | | | | |\n", rr.Run.Name, note)
		}
		for _, m := range rr.Metrics {
			arrow := "↓"
			if m.Metric.Higher {
				arrow = "↑"
			}
			ratio := "—"
			if m.Verdict != "" {
				ratio = strconv.FormatFloat(m.Ratio, 'f', 2, 64)
			}
			fmt.Fprintf(&b, "| %s | %s %s | %s | %s | %s | %s |\n", rr.Run.Name, m.Metric.Name, arrow,
				cell(m.OldMedian, m.Old), cell(m.NewMedian, m.New), ratio, m.Verdict)
		}
		if la := loads(rr); la != "" {
			fmt.Fprintf(&b, "| %s | load average at start | %s | | | |\n", rr.Run.Name, la)
		}
	}
	b.WriteString("\n↑ higher is better, ↓ lower is better; the verdict counts a change of 5% or more.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the whole result.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func describe(b Build) string {
	if b.Revision != "" {
		return fmt.Sprintf("%s (%.12s, %s)", b.Spec, b.Revision, b.Bin)
	}
	return b.Bin
}

// sideNote says why a side has fewer reports than asked.
func sideNote(rr RunResult) string {
	var notes []string
	for _, s := range []struct {
		which string
		side  Side
	}{{"old", rr.Old}, {"new", rr.New}} {
		if s.side.Unsupported != "" {
			notes = append(notes, fmt.Sprintf("%s: not supported (%s)", s.which, s.side.Unsupported))
		}
		for _, f := range s.side.Failures {
			notes = append(notes, fmt.Sprintf("%s: FAILED %s", s.which, strings.ReplaceAll(f, "\n", " ")))
		}
	}
	return strings.ReplaceAll(strings.Join(notes, "; "), "|", "\\|")
}

func loads(rr RunResult) string {
	if len(rr.Old.LoadAvg) == 0 && len(rr.New.LoadAvg) == 0 {
		return ""
	}
	return fmt.Sprintf("old %s, new %s", list(rr.Old.LoadAvg, 2), list(rr.New.LoadAvg, 2))
}

func cell(med float64, vs []float64) string {
	if len(vs) == 0 {
		return "—"
	}
	return fmt.Sprintf("%s (%s)", num(med, 3), list(vs, 3))
}

func list(vs []float64, sig int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = num(v, sig)
	}
	return strings.Join(parts, ", ")
}

// num writes v with about sig significant digits, without exponent.
func num(v float64, sig int) string {
	a := v
	if a < 0 {
		a = -a
	}
	decimals := 0
	for lim := 1.0; a < lim*pow10(sig-1) && decimals < 4 && a != 0; lim /= 10 {
		decimals++
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

func pow10(n int) float64 {
	p := 1.0
	for range n {
		p *= 10
	}
	return p
}
