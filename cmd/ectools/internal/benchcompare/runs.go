package benchcompare

import (
	"fmt"
	"strings"
)

// Metric is one figure read from a bench report (the JSON of
// "ectools bench --json").
type Metric struct {
	// Name is how the table shows it.
	Name string `json:"name"`
	// Path is where it is in the report: keys separated by dots.
	Path string `json:"path"`
	// Higher says a higher value is better (throughput); else lower is
	// (latency, CPU).
	Higher bool `json:"higher_is_better"`
}

// Run is one standard bench run: the arguments given to "ectools bench"
// (beside the store, which the comparison adds) and what is read from its
// report.
type Run struct {
	Name    string   `json:"name"`
	Args    []string `json:"args"`
	Metrics []Metric `json:"metrics"`
	// KafkaOnly: the bench makes this run with the Kafka forward target
	// only (it refuses --target rocketmq with the run's flags).
	KafkaOnly bool `json:"kafka_only,omitempty"`
}

// The metrics most runs read.
var (
	forwardRate = Metric{Name: "forwarded msg/s", Path: "center.forward_rate", Higher: true}
	p50         = Metric{Name: "commit → forward p50 ms", Path: "center.commit_to_forward.p50_ms"}
	p99         = Metric{Name: "commit → forward p99 ms", Path: "center.commit_to_forward.p99_ms"}
	processCPU  = Metric{Name: "bench process CPU µs/msg", Path: "cpu.process_us_per_msg"}
	postgresCPU = Metric{Name: "PostgreSQL backends CPU µs/msg", Path: "cpu.postgres_backends_us_per_msg"}
)

// StandardRuns are the runs a change to the hot path is compared on.
var StandardRuns = []Run{
	{
		Name: "burst",
		Args: []string{"--messages", "100000"},
		Metrics: []Metric{
			{Name: "ratio to the store baseline", Path: "ratio", Higher: true},
			forwardRate, p99, processCPU, postgresCPU,
		},
	},
	{
		Name:    "steady",
		Args:    []string{"--duration", "30s", "--rate", "16000", "--baselines=false"},
		Metrics: []Metric{p50, p99, forwardRate, processCPU, postgresCPU},
	},
	{
		Name: "checkback",
		Args: []string{"--messages", "20000", "--checkback-ratio", "1"},
		Metrics: []Metric{
			{Name: "check-backs resolved/s", Path: "center.checkback_rate", Higher: true},
			{Name: "ratio to the plain-HTTP baseline", Path: "checkback_ratio_of_baseline", Higher: true},
			{Name: "center CPU µs per check-back", Path: "cpu.parts.center_us_per_checkback"},
			{Name: "CPU ratio to the plain-HTTP client", Path: "checkback_cpu_ratio_of_baseline", Higher: true},
			{Name: "verifier CPU µs per check-back", Path: "cpu.parts.center_components_us.verifier"},
			{Name: "verifier CPU ratio to the plain-HTTP client", Path: "checkback_path_cpu_ratio_of_baseline", Higher: true},
			{Name: "prepare → forward p99 ms", Path: "center.checkback_resolution.p99_ms"},
		},
	},
	{
		Name:    "ordered",
		Args:    []string{"--messages", "50000", "--order-keys", "10000", "--baselines=false"},
		Metrics: []Metric{forwardRate, p99, processCPU, postgresCPU},
	},
	{
		Name:      "noisy",
		Args:      []string{"--baselines=false", "--flood-messages", "200000", "--quiet-rate", "200"},
		KafkaOnly: true,
		Metrics: []Metric{
			{Name: "quiet p99 during the flood ms", Path: "noisy_neighbour.quiet_p99_during_flood_ms"},
			{Name: "quiet p99 ÷ alone", Path: "noisy_neighbour.quiet_p99_ratio"},
			{Name: "quiet place in line p50 during the flood (flood msgs ahead)", Path: "noisy_neighbour.quiet_place_in_line_during_flood.p50"},
			{Name: "quiet place in line p99 during the flood (flood msgs ahead)", Path: "noisy_neighbour.quiet_place_in_line_during_flood.p99"},
			{Name: "flood msg/s with quiet", Path: "noisy_neighbour.flood_forward_rate_with_quiet", Higher: true},
		},
	},
}

// RunNames are the names of StandardRuns, in order.
func RunNames() []string {
	names := make([]string, len(StandardRuns))
	for i, r := range StandardRuns {
		names[i] = r.Name
	}
	return names
}

// selectRuns returns the standard runs named, in the order given; none
// named means all.
func selectRuns(names []string) ([]Run, error) {
	if len(names) == 0 {
		return StandardRuns, nil
	}
	var runs []Run
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if seen[n] {
			return nil, fmt.Errorf("run %q is named twice", n)
		}
		seen[n] = true
		found := false
		for _, r := range StandardRuns {
			if r.Name == n {
				runs = append(runs, r)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown run %q (want %s)", n, strings.Join(RunNames(), ", "))
		}
	}
	return runs, nil
}

// checkTarget refuses runs the bench makes with the Kafka target only when
// the bench arguments name another one (--target rocketmq), before any
// run: leave them out with --runs.
func checkTarget(runs []Run, benchArgs []string) error {
	target := "kafka"
	for i, a := range benchArgs {
		if v, ok := strings.CutPrefix(a, "--target="); ok {
			target = v
		} else if a == "--target" && i+1 < len(benchArgs) {
			target = benchArgs[i+1]
		}
	}
	if target == "kafka" {
		return nil
	}
	for _, r := range runs {
		if r.KafkaOnly {
			return fmt.Errorf("run %q measures the Kafka target only, not --target %s: name the others with --runs", r.Name, target)
		}
	}
	return nil
}
