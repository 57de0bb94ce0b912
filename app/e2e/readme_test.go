package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/testsupport/logbuf"
)

// readmeBlock is a fenced code block of README.md and the section it is in.
type readmeBlock struct {
	section, lang, text string
}

func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	require.NoError(t, err)
	var out []readmeBlock
	var cur *readmeBlock
	section := ""
	for line := range strings.Lines(string(b)) {
		switch {
		case cur == nil && strings.HasPrefix(line, "## "):
			section = strings.TrimSpace(strings.TrimPrefix(line, "## "))
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{section: section, lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
		case cur != nil && strings.HasPrefix(line, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line
		}
	}
	return out
}

// block returns the one block of the section in lang whose text holds
// marker.
func block(t *testing.T, blocks []readmeBlock, section, lang, marker string) string {
	t.Helper()
	var found []string
	for _, b := range blocks {
		if b.section == section && b.lang == lang && strings.Contains(b.text, marker) {
			found = append(found, b.text)
		}
	}
	require.Len(t, found, 1, "README section %q: one %s block holding %q", section, lang, marker)
	return found[0]
}

// tool finds a program: missing, the step is skipped, except in CI
// (CI=true), where the test fails.
func tool(t *testing.T, name string) (string, bool) {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Logf("SKIP the README's %s step: %s not found", name, name)
		return "", false
	}
	return p, true
}

var (
	bannerKafka   = regexp.MustCompile(`Kafka \(kfake\):\s+(\S+)`)
	bannerConsole = regexp.MustCompile(`Console:\s+http://(\S+)/ui/`)
	bannerAPI     = regexp.MustCompile(`Producer API:\s+http://(\S+)/v1/`)
)

// TestReadmeFirstHour does what the README tells a newcomer to do, as it
// is written, from the repository's root: the build of its two commands
// (into a temporary directory instead of bin/), `eventcenter dev`, the
// quickstart, the CLI, kcat, the curl lines, and the Python and Node
// snippets and examples, each of those twice in a row. Only the addresses
// differ: dev listens on free ports (a developer's own dev may hold the
// defaults), and every 127.0.0.1:9092, :8080 and :8081 of a snippet is
// replaced by the port dev took. Each message must end forwarded, with a
// key of its own; dev's INFO log must be the center's own events, not its
// Kafka clients' housekeeping.
func TestReadmeFirstHour(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	blocks := readmeBlocks(t)

	// The README leads with the build that shows its progress, and every
	// command it shows runs from the repository's root as written: the
	// binary is bin/eventcenter, not an eventcenter on the PATH.
	two := block(t, blocks, "The two commands", "sh", "go build")
	require.Equal(t, "go build -v -o bin/ ./cmd/eventcenter && bin/eventcenter dev\n", two)
	for _, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		for line := range strings.Lines(b.text) {
			require.False(t, strings.HasPrefix(strings.TrimSpace(line), "eventcenter "),
				"README %q: %q runs an eventcenter that is not on the PATH after go build -o bin/ (write bin/eventcenter)", b.section, line)
		}
	}

	// 1. The build, as written, into a temporary bin/.
	bin := t.TempDir()
	build, _, _ := strings.Cut(two, " && ")
	build = strings.Replace(build, "-o bin/", "-o "+bin+"/", 1)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", build)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n%s", build, out)

	// 2. bin/eventcenter dev.
	devCmd := exec.Command(filepath.Join(bin, "eventcenter"), "dev", "--data-dir", t.TempDir(),
		"--kafka-addr", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--ingress-listen", "127.0.0.1:0")
	devCmd.Dir = root
	p := &process{cmd: devCmd, output: &logbuf.Buffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	require.NoError(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("eventcenter dev said:\n%s", p.output.String())
		}
	})
	require.Eventually(t, func() bool { return strings.Contains(p.output.String(), "eventcenter dev is running") },
		2*time.Minute, 50*time.Millisecond, "dev did not start:\n%s", p.output.String())
	banner := p.output.String()
	kafka, console, api := bannerKafka.FindStringSubmatch(banner)[1], bannerConsole.FindStringSubmatch(banner)[1], bannerAPI.FindStringSubmatch(banner)[1]
	addrs := strings.NewReplacer("127.0.0.1:9092", kafka, "127.0.0.1:8080", console, "127.0.0.1:8081", api)

	run := func(name string, stdin string, argv ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, argv[0], argv[1:]...)
		c.Dir = root
		c.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		if stdin != "" {
			c.Stdin = strings.NewReader(stdin)
		}
		var stderr strings.Builder
		c.Stderr = &stderr
		out, err := c.Output()
		require.NoError(t, err, "%s: %v\nstdout:\n%s\nstderr:\n%s", name, argv, out, stderr.String())
		return string(out)
	}

	// 3. The quickstart, twice (its check-back listener on a free port).
	qs := block(t, blocks, "Quickstart", "sh", "go run ./examples/quickstart")
	require.Equal(t, "go run ./examples/quickstart\n", qs)
	for range 2 {
		got := run("quickstart", "", "sh", "-c", strings.TrimSpace(qs)+" --broker "+kafka+" --checkback 127.0.0.1:0")
		require.Contains(t, got, "forwarded to orders.events: key=order-")
	}
	// The quickstart's Go snippet is the program's own code.
	main, err := os.ReadFile(filepath.Join(root, "examples", "quickstart", "main.go"))
	require.NoError(t, err)
	for line := range strings.Lines(block(t, blocks, "Quickstart", "go", "clientlib.NewProducer")) {
		if l := strings.TrimSpace(line); l != "" {
			require.Contains(t, string(main), l, "the README's Go snippet is not examples/quickstart/main.go's code")
		}
	}

	// 4. The CLI, as written, against dev's console address.
	cli := block(t, blocks, "Quickstart", "sh", "bin/eventcenter admin")
	got := run("admin list", "", "sh", "-c", strings.Replace(strings.TrimSpace(cli), "bin/", bin+"/", 1)+" --server http://"+console)
	require.Contains(t, got, "COMMITTED/SENT")

	// 5. kcat, twice: a fresh key each time, read back forwarded.
	if _, ok := tool(t, "kcat"); ok {
		kc := addrs.Replace(block(t, blocks, "Quickstart", "sh", "kcat -P"))
		seen := map[string]bool{}
		for i := range 2 {
			if i > 0 {
				time.Sleep(1100 * time.Millisecond) // $(date +%s) moves on
			}
			key := ""
			require.Eventually(t, func() bool {
				got := run("kcat", "", "sh", "-c", kc)
				for _, m := range regexp.MustCompile(`key=(o-[0-9]+) headers=ec-id=orders:o-[0-9]+ value=hello`).FindAllStringSubmatch(got, -1) {
					if !seen[m[1]] {
						key = m[1]
					}
				}
				return key != ""
			}, time.Minute, time.Second)
			seen[key] = true
		}
	}

	// 6. curl, twice: the state is read back COMMITTED and SENT.
	if _, ok := tool(t, "curl"); ok {
		cu := addrs.Replace(block(t, blocks, "Producers without Kafka", "sh", "curl"))
		var keys []string
		for i := range 2 {
			if i > 0 {
				time.Sleep(1100 * time.Millisecond)
			}
			got := run("curl", "", "sh", "-c", cu)
			last := got[strings.LastIndex(strings.TrimSpace(got), "\n")+1:]
			var st struct {
				Key        string `json:"key"`
				Status     string `json:"status"`
				SendStatus string `json:"send_status"`
			}
			require.NoError(t, json.Unmarshal([]byte(last), &st), "the curl lines' last answer: %s", got)
			require.Equal(t, "COMMITTED", st.Status, got)
			require.Equal(t, "SENT", st.SendStatus, got)
			keys = append(keys, st.Key)
		}
		require.NotEqual(t, keys[0], keys[1], "each run of the curl lines is a message of its own")
	}

	// 7. The Python and Node snippets (from the root, as the README says)
	// and the examples they are the heart of, twice each.
	finalState := regexp.MustCompile(`(?m)^.*'?send_status'?: '(\w+)'.*$`)
	for _, lang := range []struct {
		name, tool, marker string
		argv               []string
		example            []string
	}{
		{"Python", "python3", "from eventcenter import Client", []string{"-"}, []string{"clients/python/examples/producer.py"}},
		{"Node", "node", "import { Client }", []string{"--input-type=module", "-"}, []string{"clients/node/examples/producer.mjs"}},
	} {
		path, ok := tool(t, lang.tool)
		if !ok {
			continue
		}
		lk := map[string]string{"Python": "python", "Node": "js"}[lang.name]
		snippet := addrs.Replace(block(t, blocks, "Producers without Kafka", lk, lang.marker))
		var saved []string
		for range 2 {
			got := run(lang.name+" snippet", snippet, append([]string{path}, lang.argv...)...)
			require.Contains(t, got, "local transaction: order-", got)
			m := finalState.FindStringSubmatch(got)
			require.NotNil(t, m, "%s snippet printed no final state:\n%s", lang.name, got)
			require.Equal(t, "SENT", m[1], "%s snippet: the message ended %s:\n%s", lang.name, m[1], got)
			saved = append(saved, strings.SplitN(strings.SplitN(got, "local transaction: ", 2)[1], " ", 2)[0])
		}
		require.NotEqual(t, saved[0], saved[1], "%s snippet: each run is a message of its own", lang.name)
		saved = nil
		for range 2 {
			got := run(lang.name+" example", "", append(append([]string{path}, lang.example...), "http://"+api)...)
			lines := strings.Split(strings.TrimSpace(got), "\n")
			var st struct {
				Key        string `json:"key"`
				Status     string `json:"status"`
				SendStatus string `json:"send_status"`
			}
			require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &st), "%s example's last line: %s", lang.name, got)
			require.Equal(t, "SENT", st.SendStatus, "%s example:\n%s", lang.name, got)
			require.Contains(t, got, "local transaction: "+st.Key+" saved")
			saved = append(saved, st.Key)
		}
		require.NotEqual(t, saved[0], saved[1], "%s example: each run is a message of its own", lang.name)
	}

	// 8. dev's INFO log is the center's own: its Kafka clients' housekeeping
	// is at debug.
	var info []string
	for line := range strings.Lines(p.output.String()) {
		if strings.Contains(line, "level=INFO") {
			info = append(info, strings.TrimSpace(line))
		}
	}
	for _, kgoLine := range []string{"received client metrics subscription", "producer id", "metadata update", "opening connection to broker"} {
		for _, l := range info {
			require.NotContains(t, l, kgoLine, "a Kafka client's line at INFO in dev's log")
		}
	}
	require.Less(t, len(info), 40, "dev's INFO log for this walk through the README:\n%s", strings.Join(info, "\n"))
	t.Logf("dev's INFO log: %d lines", len(info))
}
