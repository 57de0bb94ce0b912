package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/eventcenter/eventcenter/cmd/ectools/internal/bench"
	"github.com/eventcenter/eventcenter/internal/shutdown"
)

// fairCheckbackFlags are the flags of the noisy-neighbour check-back
// bench (docs/checkback.md); --noisy-checkback runs it instead of the load bench,
// with --store, --dsn, --json, --checkback-workers and
// --checkback-concurrency (when given; else the verifier's defaults).
type fairCheckbackFlags struct {
	on  bool
	cfg bench.FairCheckback
}

func addFairCheckbackFlags(f *pflag.FlagSet) *fairCheckbackFlags {
	fc := &fairCheckbackFlags{}
	f.BoolVar(&fc.on, "noisy-checkback", false, "run the noisy-neighbour check-back bench instead: bizID A's stale PREPAREs behind a slow endpoint, bizID B's check-back resolution alone and during A's (with --store sqlite|postgres, --dsn, --json; --checkback-workers and --checkback-concurrency when given)")
	f.IntVar(&fc.cfg.Backlog, "noisy-checkback-backlog", 20000, "--noisy-checkback: bizID A's stale PREPAREs")
	f.DurationVar(&fc.cfg.SlowAnswer, "noisy-checkback-slow", 0, "--noisy-checkback: how long A's endpoint takes to answer (default 2s)")
	f.Float64Var(&fc.cfg.BRate, "noisy-checkback-b-rate", 50, "--noisy-checkback: bizID B's PREPAREs per second")
	f.DurationVar(&fc.cfg.Phase, "noisy-checkback-phase", 0, "--noisy-checkback: how long B sends in each phase (default 10s)")
	return fc
}

// run runs the noisy-neighbour check-back bench and prints its table.
func (fc *fairCheckbackFlags) run(cmd *cobra.Command, b bench.Config, jsonPath string) error {
	fc.cfg.Store, fc.cfg.DSN, fc.cfg.Logger = b.Store, b.DSN, b.Logger
	fc.cfg.Progress = cmd.ErrOrStderr()
	if cmd.Flags().Changed("checkback-workers") {
		fc.cfg.Workers = b.CheckbackWorkers
	}
	if cmd.Flags().Changed("checkback-concurrency") {
		fc.cfg.EndpointConcurrency = b.CheckbackConcurrency
	}
	ctx, cancel := shutdown.SignalContext(cmd.Context(), b.Logger)
	defer cancel()
	rep, err := bench.RunFairCheckback(ctx, fc.cfg)
	if rep != nil {
		writeFairCheckbackTable(cmd.OutOrStdout(), rep)
		if jsonPath != "" {
			b, jerr := json.MarshalIndent(rep, "", "  ")
			if jerr == nil {
				jerr = os.WriteFile(jsonPath, append(b, '\n'), 0o644)
			}
			if jerr != nil {
				return fmt.Errorf("--json: %w", jerr)
			}
		}
	}
	return err
}

func writeFairCheckbackTable(w io.Writer, r *bench.FairCheckbackReport) {
	fmt.Fprintf(w, "noisy-neighbour check-back: store %s, A %d stale PREPAREs answered in %s, B %.0f/s for %s a phase, workers %d, endpoint concurrency %d (0: defaults)\n",
		r.Config.Store, r.Config.Backlog, r.Config.SlowAnswer, r.Config.BRate, r.Config.Phase, r.Config.Workers, r.Config.EndpointConcurrency)
	fmt.Fprintf(w, "%-22s %8s %10s %10s %10s %10s\n", "B's resolution (ms)", "n", "p50", "p90", "p99", "max")
	for _, row := range []struct {
		name string
		l    bench.CkLatency
	}{{"alone", r.Alone}, {"during A's backlog", r.During}} {
		fmt.Fprintf(w, "%-22s %8d %10.1f %10.1f %10.1f %10.1f\n", row.name, row.l.N, row.l.P50, row.l.P90, row.l.P99, row.l.Max)
	}
	fmt.Fprintf(w, "p99 during / alone: %.2f (at most 2 wanted); A resolved: %d; A's most attempts: %d; B unresolved: %d\n",
		r.Ratio, r.AResolved, r.AMaxAttempts, r.BMissing)
	if r.BMissing > 0 {
		fmt.Fprintf(w, "(B's unresolved check-backs count with the time they waited: the during figures and the ratio are lower bounds)\n")
	}
}
