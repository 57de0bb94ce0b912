package benchcompare

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeBench writes an executable standing in for an ectools binary: each
// call appends label to <dir>/order and writes a report whose
// center.forward_rate and ratio are the next line of <dir>/rates-<label>.
// With refuse set it fails like an older bench on that flag; with fail
// set it fails every run.
func fakeBench(t *testing.T, dir, label string, rates []string, refuse, fail string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rates-"+label), []byte(strings.Join(rates, "\n")+"\n"), 0o644))
	script := fmt.Sprintf(`#!/bin/sh
dir=%q; label=%q; refuse=%q; fail=%q
echo "$label $*" >> "$dir/order"
json=""; prev=""
for a in "$@"; do
	[ "$prev" = "--json" ] && json="$a"
	[ -n "$refuse" ] && [ "$a" = "$refuse" ] && { echo "Error: unknown flag: $refuse" >&2; exit 1; }
	prev="$a"
done
[ -n "$fail" ] && { echo "$fail" >&2; exit 1; }
n=$(cat "$dir/count-$label" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$dir/count-$label"
rate=$(sed -n "${n}p" "$dir/rates-$label")
printf '{"machine":{"loadavg_start":1.5},"ratio":%%s,"center":{"forward_rate":%%s,"commit_to_forward":{"p99_ms":100}}}' "$rate" "$rate" > "$json"
`, dir, label, refuse, fail)
	path := filepath.Join(dir, "ectools-"+label)
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return path
}

func runOrder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "order"))
	require.NoError(t, err)
	var labels []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		labels = append(labels, strings.Fields(l)[0])
	}
	return labels
}

// Runs alternate between the builds, pair by pair; medians and the ratio
// are taken from every report, and the bench arguments reach each run.
func TestCompareAlternatesAndTakesMedians(t *testing.T) {
	dir := t.TempDir()
	old := fakeBench(t, dir, "old", []string{"100", "300", "200"}, "", "")
	cur := fakeBench(t, dir, "new", []string{"90", "80", "70"}, "", "")
	res, err := Compare(t.Context(), Config{Old: old, New: cur, Runs: []string{"burst"}, Pairs: 3,
		BenchArgs: []string{"--store", "sqlite"}, Out: filepath.Join(dir, "out")})
	require.NoError(t, err)
	require.Equal(t, []string{"old", "new", "new", "old", "old", "new"}, runOrder(t, dir))
	order, err := os.ReadFile(filepath.Join(dir, "order"))
	require.NoError(t, err)
	require.Contains(t, string(order), "old bench --messages 100000 --store sqlite --json "+filepath.Join(dir, "out", "burst-old-1.json"))

	require.Len(t, res.Runs, 1)
	rr := res.Runs[0]
	require.Len(t, rr.Old.Reports, 3)
	require.Equal(t, []float64{1.5, 1.5, 1.5}, rr.New.LoadAvg)
	rate := rr.Metrics[1]
	require.Equal(t, "center.forward_rate", rate.Metric.Path)
	require.Equal(t, []float64{100, 300, 200}, rate.Old)
	require.Equal(t, []float64{90, 80, 70}, rate.New)
	require.InDelta(t, 200, rate.OldMedian, 1e-9)
	require.InDelta(t, 80, rate.NewMedian, 1e-9)
	require.InDelta(t, 0.4, rate.Ratio, 1e-9)
	require.Equal(t, "worse", rate.Verdict)
	p99 := rr.Metrics[2]
	require.Equal(t, "same", p99.Verdict)
	cpu := rr.Metrics[3]
	require.Empty(t, cpu.Old, "a metric missing from the reports")
	require.Empty(t, cpu.Verdict)
	require.False(t, res.Failed())

	var table bytes.Buffer
	require.NoError(t, res.WriteTable(&table))
	require.Contains(t, table.String(), "| burst | forwarded msg/s ↑ | 200 (100, 300, 200) | 80.0 (90.0, 80.0, 70.0) | 0.40 | worse |")
	require.Contains(t, table.String(), "| burst | load average at start | old 1.5, 1.5, 1.5, new 1.5, 1.5, 1.5 | | | |")
}

// A run a build's bench does not know is not supported on that side: it
// is not run again, the other side still runs, and nothing failed.
func TestCompareRunNotSupportedByABuild(t *testing.T) {
	dir := t.TempDir()
	old := fakeBench(t, dir, "old", []string{"100"}, "--order-keys", "")
	cur := fakeBench(t, dir, "new", []string{"90", "80"}, "", "")
	res, err := Compare(t.Context(), Config{Old: old, New: cur, Runs: []string{"ordered"}, Pairs: 2, Out: filepath.Join(dir, "out")})
	require.NoError(t, err)
	require.Equal(t, []string{"old", "new", "new"}, runOrder(t, dir), "not tried again after it was refused")
	rr := res.Runs[0]
	require.Equal(t, "its bench does not know --order-keys", rr.Old.Unsupported)
	require.Len(t, rr.New.Reports, 2)
	require.Empty(t, rr.Metrics[0].Verdict)
	require.False(t, res.Failed())
	var table bytes.Buffer
	require.NoError(t, res.WriteTable(&table))
	require.Contains(t, table.String(), "old: not supported (its bench does not know --order-keys)")
}

// A bench run that fails is kept in the result with the end of its
// output, the comparison goes on, and the result says it failed.
func TestCompareReportsAFailedRun(t *testing.T) {
	dir := t.TempDir()
	old := fakeBench(t, dir, "old", []string{"100"}, "", "")
	cur := fakeBench(t, dir, "new", nil, "", "3 messages were not forwarded within --drain-timeout")
	res, err := Compare(t.Context(), Config{Old: old, New: cur, Runs: []string{"burst", "steady"}, Pairs: 1, Out: filepath.Join(dir, "out")})
	require.NoError(t, err)
	require.Len(t, res.Runs, 2, "the next run was made")
	require.True(t, res.Failed())
	require.Len(t, res.Runs[0].New.Failures, 1)
	require.Contains(t, res.Runs[0].New.Failures[0], "3 messages were not forwarded")
	var table bytes.Buffer
	require.NoError(t, res.WriteTable(&table))
	require.Contains(t, table.String(), "new: FAILED run 1: exit status 1: 3 messages were not forwarded")
}

func TestCompareRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	bin := fakeBench(t, dir, "old", nil, "", "")
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Old: bin, New: bin, Runs: []string{"burst", "warp"}, Out: dir}, `unknown run "warp" (want burst, steady, checkback, ordered, noisy)`},
		{Config{Old: bin, New: bin, Runs: []string{"burst", "burst"}, Out: dir}, `run "burst" is named twice`},
		{Config{Old: bin, New: bin, Pairs: -1, Out: dir}, "pairs: -1"},
		{Config{Old: bin, New: bin, BenchArgs: []string{"--json", "x"}, Out: dir}, "--json is set by the comparison"},
		{Config{Old: bin, New: bin, BenchArgs: []string{"--target", "rocketmq"}, Out: dir}, `run "noisy" measures the Kafka target only, not --target rocketmq`},
		{Config{Old: bin, New: bin, Runs: []string{"noisy"}, BenchArgs: []string{"--target=rocketmq"}, Out: dir}, `run "noisy" measures the Kafka target only`},
		{Config{Old: dir, New: bin, Out: dir, Repo: dir}, "not an executable file"},
		{Config{Old: "no-such-rev", New: bin, Out: dir, Repo: dir}, "no-such-rev: neither a file nor a git revision of " + dir},
	} {
		_, err := Compare(t.Context(), tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
}

// With --target rocketmq the runs the bench makes on any target go ahead,
// the argument reaching each; noisy (Kafka only) is refused up front.
func TestCompareTargetRocketMQ(t *testing.T) {
	dir := t.TempDir()
	bin := fakeBench(t, dir, "old", []string{"100", "100"}, "", "")
	_, err := Compare(t.Context(), Config{Old: bin, New: bin, Runs: []string{"ordered"}, Pairs: 1,
		BenchArgs: []string{"--target", "rocketmq"}, Out: filepath.Join(dir, "out")})
	require.NoError(t, err)
	order, err := os.ReadFile(filepath.Join(dir, "order"))
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(order), "--order-keys 10000 --baselines=false --target rocketmq --json"))
	require.NoError(t, checkTarget(StandardRuns, []string{"--target", "kafka"}))
}

// A git revision is built into an ectools binary once, from that
// revision's tree (not the working tree), and cached by commit.
func TestCompareBuildsARevision(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	main := func(rate string) {
		t.Helper()
		src := `package main

import (
	"os"
)

func main() {
	for i, a := range os.Args {
		if a == "--json" {
			_ = os.WriteFile(os.Args[i+1], []byte(` + "`" + `{"center":{"forward_rate":` + rate + `}}` + "`" + `), 0o644)
		}
	}
}
`
		require.NoError(t, os.MkdirAll(filepath.Join(repo, "cmd", "ectools"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(repo, "cmd", "ectools", "main.go"), []byte(src), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module example.com/fake\n\ngo 1.22\n"), 0o644))
	git("init", "-q")
	main("100")
	git("add", ".")
	git("commit", "-qm", "release")
	git("tag", "v1.0.0")
	main("150") // the working tree differs from the tag
	git("commit", "-qam", "faster")

	out := filepath.Join(t.TempDir(), "out")
	var progress bytes.Buffer
	cfg := Config{Old: "v1.0.0", New: "HEAD", Runs: []string{"burst"}, Pairs: 1, Out: out, Repo: repo, Progress: &progress}
	res, err := Compare(t.Context(), cfg)
	require.NoError(t, err)
	require.Len(t, res.Old.Revision, 40)
	require.NotEqual(t, res.Old.Revision, res.New.Revision)
	rate := res.Runs[0].Metrics[1]
	require.Equal(t, []float64{100}, rate.Old)
	require.Equal(t, []float64{150}, rate.New)
	require.InDelta(t, 1.5, rate.Ratio, 1e-9)
	require.Equal(t, "better", rate.Verdict)

	progress.Reset()
	_, err = Compare(context.Background(), cfg)
	require.NoError(t, err)
	require.Contains(t, progress.String(), "build v1.0.0 ("+res.Old.Revision[:12]+"): cached")
}

func TestMedianAndVerdict(t *testing.T) {
	require.Zero(t, median(nil))
	require.InDelta(t, 2.5, median([]float64{4, 1, 3, 2}), 1e-9)
	require.Equal(t, "better", verdict(0.9, false, 0.05))
	require.Equal(t, "worse", verdict(0.9, true, 0.05))
	require.Equal(t, "same", verdict(1.04, true, 0.05))
	require.Equal(t, "--order-keys", unknownFlag("Error: unknown flag: --order-keys\nUsage:"))
	require.Empty(t, unknownFlag("Error: 3 messages were not forwarded"))
}
