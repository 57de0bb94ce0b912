package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/eventcenter/eventcenter/cmd/ectools/internal/bench"
)

// newBenchChart is "ectools bench-chart": the charts of a JSON report as
// one SVG file (docs/performance.md's charts are made by it).
func newBenchChart() *cobra.Command {
	var out, html string
	cmd := &cobra.Command{
		Use:   "bench-chart REPORT.json -o CHART.svg",
		Short: "Draw a bench JSON report as an SVG chart (or --html: the bench page)",
		Long: `bench-chart reads a report written by "ectools bench --json" and draws it with
the code of "ectools bench --html": sent and forwarded per second, the backlog,
the commit-to-forward latency per second (reports that have it), the heap and
the CPU per forwarded message by part, as one SVG file. --html writes the whole
page instead.`,
		Example: `  go run ./cmd/ectools bench-chart docs/bench/2026-11-26-pg-core/burst-20k-1.json -o pg-20k.svg`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" && html == "" {
				return errors.New("-o or --html is required")
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			rep, err := bench.ReadReport(f)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if out != "" {
				if err := writeFile(out, func(w io.Writer) error { _, err := io.WriteString(w, rep.SVG()+"\n"); return err }); err != nil {
					return fmt.Errorf("-o: %w", err)
				}
			}
			if html != "" {
				if err := writeFile(html, rep.WriteHTML); err != nil {
					return fmt.Errorf("--html: %w", err)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "SVG file to write")
	cmd.Flags().StringVar(&html, "html", "", "write the bench page (as ectools bench --html) to this file")
	return cmd
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(write(f), f.Close())
}
