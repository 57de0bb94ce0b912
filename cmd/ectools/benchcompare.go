package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/eventcenter/eventcenter/cmd/ectools/internal/benchcompare"
	"github.com/eventcenter/eventcenter/internal/shutdown"
)

func newBenchCompare() *cobra.Command {
	var cfg benchcompare.Config
	var store, dsn, jsonPath string
	cmd := &cobra.Command{
		Use:   "compare --old BUILD [--new BUILD]",
		Short: "Compare two builds of the center on the standard bench runs, alternated, medians",
		Long: `compare runs the standard bench runs (` + strings.Join(benchcompare.RunNames(), ", ") + `) on two
builds, --pairs times each, alternating which build goes first, and prints a
Markdown table: per metric each build's median with every value behind it,
the ratio new ÷ old and whether that is better, worse or the same (within 5%).

A build is an ectools binary, or a git revision of --repo (a tag, a branch, a
commit) that is built once into <out>/builds. Each build runs its own bench,
so its own center and load generator, as a release is measured. A run whose
flags a build does not know (an older bench) is reported as not supported.
--new defaults to this binary. "--bench-arg=--target --bench-arg=rocketmq"
measures the RocketMQ target; noisy is Kafka only, leave it out with --runs.

Every report and log is kept in --out. Compare against the last release tag
before changing the hot path (docs/development.md, "Changing the hot path").
The machine should be otherwise quiet: the runs take the whole of it.`,
		Example: `  ectools bench compare --old v0.9.0 --store postgres --dsn postgres://postgres@127.0.0.1:5432/test
  ectools bench compare --old /tmp/ectools-main --new bin/ectools --runs burst,checkback --pairs 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Old == "" {
				return errors.New("--old: required (an ectools binary or a git revision)")
			}
			if cfg.New == "" {
				self, err := os.Executable()
				if err != nil {
					return fmt.Errorf("--new: this binary: %w", err)
				}
				cfg.New = self
			}
			if cfg.Out == "" {
				cfg.Out = "bench-compare-" + time.Now().UTC().Format("20060102-150405")
			}
			if cfg.Repo == "" {
				wd, err := os.Getwd()
				if err != nil {
					return fmt.Errorf("--repo: %w", err)
				}
				cfg.Repo = wd
			}
			if store != "" {
				cfg.BenchArgs = append([]string{"--store", store}, cfg.BenchArgs...)
			}
			if dsn != "" {
				cfg.BenchArgs = append(cfg.BenchArgs, "--dsn", dsn)
			}
			cfg.Progress = cmd.ErrOrStderr()
			ctx, cancel := shutdown.SignalContext(cmd.Context(), slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
			defer cancel()
			res, err := benchcompare.Compare(ctx, cfg)
			if err != nil {
				return err
			}
			if err := res.WriteTable(cmd.OutOrStdout()); err != nil {
				return err
			}
			if jsonPath == "" {
				jsonPath = filepath.Join(cfg.Out, "compare.json")
			}
			if err := writeFile(jsonPath, res.WriteJSON); err != nil {
				return fmt.Errorf("--json: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "reports, logs and %s are in %s\n", filepath.Base(jsonPath), cfg.Out)
			if res.Failed() {
				return errors.New("some bench runs failed (see the table)")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Old, "old", "", "the build compared against: an ectools binary or a git revision (a release tag)")
	f.StringVar(&cfg.New, "new", "", "the build measured: an ectools binary or a git revision (default: this binary)")
	f.StringSliceVar(&cfg.Runs, "runs", nil, "standard runs to make, in order (default all: "+strings.Join(benchcompare.RunNames(), ",")+")")
	f.IntVar(&cfg.Pairs, "pairs", 3, "alternated pairs per run")
	f.StringVar(&store, "store", "postgres", "the store of every run (bench --store)")
	f.StringVar(&dsn, "dsn", "", "the store's DSN (bench --dsn)")
	f.StringArrayVar(&cfg.BenchArgs, "bench-arg", nil, "an argument added to every bench run (repeat it)")
	f.StringVar(&cfg.Out, "out", "", "directory for the reports and logs (default bench-compare-<UTC time>)")
	f.StringVar(&jsonPath, "json", "", "write the comparison as JSON here (default <out>/compare.json)")
	f.StringVar(&cfg.Repo, "repo", "", "git repository revisions are built from (default: the working directory)")
	f.StringVar(&cfg.Cache, "cache", "", "directory of the binaries built from revisions (default <out>/builds)")
	f.Float64Var(&cfg.Threshold, "threshold", 0.05, "relative change reported as better or worse")
	return cmd
}
