package benchcompare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Config says what to compare and how.
type Config struct {
	// Old and New are the builds: an ectools binary's path, or a git
	// revision of Repo built into one.
	Old, New string
	// Runs names the standard runs (nil: all of StandardRuns).
	Runs []string
	// Pairs is how many times each run is made per build (default 3).
	Pairs int
	// BenchArgs are added to every run (the store and its DSN, say).
	BenchArgs []string
	// Out keeps every report and log (required).
	Out string
	// Repo is the git repository revisions are built from.
	Repo string
	// Cache keeps the binaries built from revisions.
	Cache string
	// Threshold is the relative change reported as better or worse
	// (default 0.05).
	Threshold float64
	// Progress receives a line per bench run.
	Progress io.Writer
}

// Result is a comparison: the builds, and per run every value and median.
type Result struct {
	Old     Build       `json:"old"`
	New     Build       `json:"new"`
	Pairs   int         `json:"pairs"`
	Args    []string    `json:"bench_args,omitempty"`
	Started time.Time   `json:"started"`
	Took    string      `json:"took"`
	Runs    []RunResult `json:"runs"`
}

// RunResult is one standard run on both builds.
type RunResult struct {
	Run     Run            `json:"run"`
	Old     Side           `json:"old"`
	New     Side           `json:"new"`
	Metrics []MetricResult `json:"metrics"`
}

// Side is one build's reports of a run.
type Side struct {
	// Reports are the JSON reports, in the order made.
	Reports []string `json:"reports"`
	// LoadAvg is the machine's load average at the start of each report.
	LoadAvg []float64 `json:"loadavg_start,omitempty"`
	// Unsupported says why the build cannot make the run (its bench does
	// not know a flag).
	Unsupported string `json:"unsupported,omitempty"`
	// Failures are the runs that failed, with the end of their output.
	Failures []string `json:"failures,omitempty"`
}

// MetricResult is one metric of a run on both builds.
type MetricResult struct {
	Metric    Metric    `json:"metric"`
	Old       []float64 `json:"old"`
	New       []float64 `json:"new"`
	OldMedian float64   `json:"old_median"`
	NewMedian float64   `json:"new_median"`
	// Ratio is NewMedian ÷ OldMedian (0 when either is missing).
	Ratio float64 `json:"ratio"`
	// Verdict is "better", "worse" or "same" (within Threshold), or ""
	// when either side has no value.
	Verdict string `json:"verdict,omitempty"`
}

// Failed tells whether any bench run failed (a build that does not
// support a run did not fail).
func (r *Result) Failed() bool {
	for _, rr := range r.Runs {
		if len(rr.Old.Failures) > 0 || len(rr.New.Failures) > 0 {
			return true
		}
	}
	return false
}

// Compare resolves both builds and makes every run Pairs times on each,
// alternating which build goes first, then reads the reports. It returns
// an error only when it cannot compare at all; failed bench runs are in
// the result (Result.Failed).
func Compare(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Pairs == 0 {
		cfg.Pairs = 3
	}
	if cfg.Pairs < 1 {
		return nil, fmt.Errorf("pairs: %d (want at least 1)", cfg.Pairs)
	}
	if cfg.Threshold == 0 {
		cfg.Threshold = 0.05
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Out == "" {
		return nil, errors.New("no output directory")
	}
	runs, err := selectRuns(cfg.Runs)
	if err != nil {
		return nil, err
	}
	for _, a := range cfg.BenchArgs {
		if a == "--json" || strings.HasPrefix(a, "--json=") {
			return nil, errors.New("bench arguments: --json is set by the comparison")
		}
	}
	if err := checkTarget(runs, cfg.BenchArgs); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	if cfg.Cache == "" {
		cfg.Cache = filepath.Join(cfg.Out, "builds")
	}
	if err := os.MkdirAll(cfg.Cache, 0o755); err != nil {
		return nil, fmt.Errorf("build cache: %w", err)
	}
	res := &Result{Pairs: cfg.Pairs, Args: cfg.BenchArgs, Started: time.Now()}
	if res.Old, err = resolve(ctx, cfg.Old, cfg.Repo, cfg.Cache, cfg.Progress); err != nil {
		return nil, fmt.Errorf("old: %w", err)
	}
	if res.New, err = resolve(ctx, cfg.New, cfg.Repo, cfg.Cache, cfg.Progress); err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	for _, run := range runs {
		rr := RunResult{Run: run}
		for i := range cfg.Pairs {
			order := []string{"old", "new"}
			if i%2 == 1 {
				order = []string{"new", "old"}
			}
			for _, which := range order {
				side, b := &rr.Old, res.Old
				if which == "new" {
					side, b = &rr.New, res.New
				}
				if side.Unsupported != "" {
					continue
				}
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				benchOnce(ctx, cfg, run, b, which, i, side)
			}
		}
		rr.Metrics = summarize(run, rr.Old, rr.New, cfg.Threshold)
		res.Runs = append(res.Runs, rr)
	}
	res.Took = time.Since(res.Started).Round(time.Second).String()
	return res, nil
}

// benchOnce makes run i of a build and records its report, or why there
// is none.
func benchOnce(ctx context.Context, cfg Config, run Run, b Build, which string, i int, side *Side) {
	base := filepath.Join(cfg.Out, fmt.Sprintf("%s-%s-%d", run.Name, which, i+1))
	report, logPath := base+".json", base+".log"
	args := append(append(append([]string{"bench"}, run.Args...), cfg.BenchArgs...), "--json", report)
	fmt.Fprintf(cfg.Progress, "%s %d/%d %s: %s %s\n", run.Name, i+1, cfg.Pairs, which, b.Bin, strings.Join(args, " "))
	start := time.Now()
	log, err := os.Create(logPath)
	if err != nil {
		side.Failures = append(side.Failures, fmt.Sprintf("run %d: %v", i+1, err))
		return
	}
	cmd := exec.CommandContext(ctx, b.Bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	runErr := cmd.Run()
	_ = log.Close()
	if runErr != nil {
		out, _ := os.ReadFile(logPath)
		if flag := unknownFlag(string(out)); flag != "" {
			side.Unsupported = fmt.Sprintf("its bench does not know %s", flag)
			fmt.Fprintf(cfg.Progress, "%s %s: not supported (%s)\n", run.Name, which, side.Unsupported)
			return
		}
		side.Failures = append(side.Failures, fmt.Sprintf("run %d: %v: %s (log %s)", i+1, runErr, tail(string(out), 600), logPath))
		fmt.Fprintf(cfg.Progress, "%s %d/%d %s: failed after %s: %v (log %s)\n", run.Name, i+1, cfg.Pairs, which, time.Since(start).Round(time.Second), runErr, logPath)
		return
	}
	side.Reports = append(side.Reports, report)
	if la, ok := readNumber(report, "machine.loadavg_start"); ok {
		side.LoadAvg = append(side.LoadAvg, la)
	}
	fmt.Fprintf(cfg.Progress, "%s %d/%d %s: done in %s\n", run.Name, i+1, cfg.Pairs, which, time.Since(start).Round(time.Second))
}

// unknownFlag returns the flag an ectools run refused as unknown ("" for
// another failure).
func unknownFlag(out string) string {
	const marker = "unknown flag: "
	i := strings.Index(out, marker)
	if i < 0 {
		return ""
	}
	f := out[i+len(marker):]
	if j := strings.IndexAny(f, " \n"); j >= 0 {
		f = f[:j]
	}
	return f
}

// summarize reads each metric from both sides' reports.
func summarize(run Run, old, cur Side, threshold float64) []MetricResult {
	var ms []MetricResult
	for _, m := range run.Metrics {
		mr := MetricResult{Metric: m, Old: values(old.Reports, m.Path), New: values(cur.Reports, m.Path)}
		mr.OldMedian, mr.NewMedian = median(mr.Old), median(mr.New)
		if len(mr.Old) > 0 && len(mr.New) > 0 && mr.OldMedian != 0 {
			mr.Ratio = mr.NewMedian / mr.OldMedian
			mr.Verdict = verdict(mr.Ratio, m.Higher, threshold)
		}
		ms = append(ms, mr)
	}
	return ms
}

func verdict(ratio float64, higher bool, threshold float64) string {
	gain := ratio - 1
	if !higher {
		gain = -gain
	}
	switch {
	case gain >= threshold:
		return "better"
	case gain <= -threshold:
		return "worse"
	}
	return "same"
}

// values reads path from each report that has it.
func values(reports []string, path string) []float64 {
	var vs []float64
	for _, r := range reports {
		if v, ok := readNumber(r, path); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// readNumber reads the number at path (keys separated by dots) of a JSON
// report.
func readNumber(report, path string) (float64, bool) {
	b, err := os.ReadFile(report)
	if err != nil {
		return 0, false
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, false
	}
	for _, k := range strings.Split(path, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return 0, false
		}
		if v, ok = obj[k]; !ok {
			return 0, false
		}
	}
	f, ok := v.(float64)
	return f, ok && !math.IsNaN(f)
}

// median of vs (0 for none).
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
