package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/testsupport/logbuf"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds cmd/eventcenter once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "eventcenter-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "eventcenter")
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		// With the RocketMQ stand-in, for TestDevRocketMQ's dev --rocketmq
		// (the product build leaves it out).
		cmd := exec.Command("go", "build", "-tags", "rocketmqfake", "-o", binPath, "./cmd/eventcenter")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

// process is the center binary running as a subprocess.
type process struct {
	cmd    *exec.Cmd
	output *logbuf.Buffer
	done   chan struct{}
}

// startBinary runs the binary with args; it is killed at cleanup.
func startBinary(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(binary(t), args...), output: &logbuf.Buffer{}, done: make(chan struct{})}
	p.cmd.Stdout = p.output
	p.cmd.Stderr = p.output
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("output of %v:\n%s", args, p.output.String())
		}
	})
	return p
}

func (p *process) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.done
}

func (p *process) interrupt(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
	case <-time.After(40 * time.Second):
		t.Fatalf("center did not stop on SIGTERM:\n%s", p.output.String())
	}
}

// writeConfig writes the env's configuration as YAML for the binary.
func writeConfig(t *testing.T, cfg config.Config) string {
	t.Helper()
	data, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "eventcenter.yaml")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestCrashMidStream runs the built binary, SIGKILLs it while messages are
// flowing, starts it again, and checks that nothing was lost.
func TestCrashMidStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "postgres", func(c *config.Config) {
		c.Kafka.SessionTimeout = 6 * time.Second
	})
	cfgPath := writeConfig(t, e.cfg)
	col := e.collect(businessTopic)

	first := startBinary(t, "serve", "--config", cfgPath)
	var pl plan
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		pl = produceMix(t, e, "crash", 3000, 4)
	}()
	// Kill it once it is busy forwarding.
	require.Eventually(t, func() bool { ids, _ := col.count(); return ids >= 300 }, time.Minute, 10*time.Millisecond,
		"the first center never forwarded anything:\n%s", first.output.String())
	first.kill(t)
	ids, _ := col.count()
	t.Logf("killed the center after %d messages were forwarded", ids)

	second := startBinary(t, "serve", "--config", cfgPath)
	<-produced
	col.waitFor(t, pl.committed, 2*time.Minute)
	checkForwarded(t, col, pl)
	second.interrupt(t)
	require.Zero(t, second.cmd.ProcessState.ExitCode(), "a clean stop after SIGTERM:\n%s", second.output.String())
}

// TestDevWithKcat starts `eventcenter dev` as a process, sends a
// transactional message with kcat (a non-Go client, so the wire format is
// what the README shows) and reads the forwarded message back with kcat.
func TestDevWithKcat(t *testing.T) {
	t.Parallel()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed (.ci/run installs Debian's kcat)")
		}
		t.Skip("kcat not installed (apt-get install kcat); skipping the dev + kcat test")
	}
	port := freePort(t)
	broker := fmt.Sprintf("127.0.0.1:%d", port)
	dev := startBinary(t, "dev", "--kafka-addr", broker, "--data-dir", t.TempDir(), "--http-listen", "127.0.0.1:0", "--ingress-listen", "127.0.0.1:0")
	require.Eventually(t, func() bool { return strings.Contains(dev.output.String(), "eventcenter dev is running") },
		time.Minute, 20*time.Millisecond, "dev did not start:\n%s", dev.output.String())

	produce := func(value string, headers ...string) {
		args := []string{"-P", "-b", broker, "-t", "eventcenter.control", "-k", "orders:kcat-1"}
		for _, h := range headers {
			args = append(args, "-H", h)
		}
		cmd := exec.Command(kcat, args...)
		cmd.Stdin = strings.NewReader(value + "\n")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "kcat -P: %s", out)
	}
	produce("hello from kcat", "ec-type=prepare", "ec-biz=orders", "ec-key=kcat-1", "ec-topic=kcat.events", "ec-fkey=order-1", "ec-h-source=kcat")
	produce("commit", "ec-type=commit", "ec-biz=orders", "ec-key=kcat-1")

	var got string
	require.Eventually(t, func() bool {
		cmd := exec.Command(kcat, "-C", "-b", broker, "-t", "kcat.events", "-o", "beginning", "-e", "-q",
			"-f", "key=%k value=%s headers=%h\n")
		out, err := cmd.CombinedOutput()
		got = string(out)
		return err == nil && strings.Contains(got, "hello from kcat")
	}, time.Minute, 200*time.Millisecond, "not forwarded; kcat said %q; center said:\n%s", got, dev.output.String())
	line := firstLine(got, "hello from kcat")
	require.Contains(t, line, "key=order-1")
	require.Contains(t, line, "value=hello from kcat")
	require.Contains(t, line, "source=kcat")
	require.Contains(t, line, "ec-id=orders:kcat-1")
	dev.interrupt(t)
}

func firstLine(s, containing string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.Contains(sc.Text(), containing) {
			return sc.Text()
		}
	}
	return ""
}
