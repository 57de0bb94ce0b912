package soak

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/eventcenter/eventcenter/app/config"
)

// proc is a child process whose output goes to a log file.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
	err  error // cmd.Wait's, once done is closed
}

func startProc(bin, logPath string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", logPath, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group: a terminal's Ctrl-C reaches the soak, which
	// then stops the children in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), log: f}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) signal(s syscall.Signal) error { return p.cmd.Process.Signal(s) }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGCONT and SIGTERM and waits up to grace, then SIGKILLs.
func (p *proc) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	_ = p.signal(syscall.SIGCONT)
	_ = p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		_ = p.signal(syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("pid %d did not stop within %s; killed", p.cmd.Process.Pid, grace)
	}
}

// kill SIGKILLs the process and waits for it; it fails when the process
// cannot be signalled (it had exited already).
func (p *proc) kill() error {
	err := p.signal(syscall.SIGKILL)
	<-p.done
	if err != nil {
		return fmt.Errorf("SIGKILL pid %d: %w", p.cmd.Process.Pid, err)
	}
	return nil
}

// broker is the ecbroker process.
type broker struct {
	*proc
	addr    string
	control string
}

func startBroker(ctx context.Context, bin, workDir string, port, partitions int, topics []string) (*broker, error) {
	logPath := filepath.Join(workDir, "ecbroker.log")
	p, err := startProc(bin, logPath, "--port", fmt.Sprint(port), "--partitions", fmt.Sprint(partitions),
		"--topics", strings.Join(topics, ","), "--control", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &broker{proc: p}
	deadline := time.Now().Add(30 * time.Second)
	for {
		line := firstLineWith(logPath, "ecbroker listening on ")
		if line != "" {
			// "ecbroker listening on ADDR control http://HOST:PORT"
			f := strings.Fields(line)
			b.addr, b.control = f[3], f[5]
			return b, nil
		}
		if p.exited() || time.Now().After(deadline) || ctx.Err() != nil {
			_ = p.kill()
			return nil, fmt.Errorf("ecbroker did not start (see %s)", logPath)
		}
		time.Sleep(20 * time.Millisecond) // polling a log file
	}
}

func firstLineWith(path, prefix string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			return sc.Text()
		}
	}
	return ""
}

// setFault sets the broker's error rate for "produce" or "fetch".
func (b *broker) setFault(ctx context.Context, kind string, rate float64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/faults?key=%s&rate=%g", b.control, kind, rate), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("broker fault %s=%g: %w", kind, rate, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("broker fault %s=%g: %s", kind, rate, resp.Status)
	}
	return nil
}

// centerProc is one "eventcenter serve" process, restarted in place.
type centerProc struct {
	mu       sync.Mutex
	idx      int
	bin      string
	cfgPath  string
	logPath  string
	httpAddr string
	cur      *proc
	stopped  bool // SIGSTOPped
	starts   int
	// ending is set while the soak itself kills or stops the current
	// process; any other exit is unexpected and recorded in exits.
	ending bool
	exits  []string
	// sentBefore accumulates the forward counter of earlier lives.
	sentBefore float64
}

func newCenterProc(idx int, bin, workDir string, cfg config.Config) (*centerProc, error) {
	c := &centerProc{idx: idx, bin: bin, httpAddr: cfg.HTTP.Listen,
		cfgPath: filepath.Join(workDir, fmt.Sprintf("center%d.yaml", idx)),
		logPath: filepath.Join(workDir, fmt.Sprintf("center%d.log", idx))}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("center %d config: %w", idx, err)
	}
	if err := os.WriteFile(c.cfgPath, data, 0o600); err != nil {
		return nil, fmt.Errorf("center %d config: %w", idx, err)
	}
	return c, nil
}

func (c *centerProc) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := startProc(c.bin, c.logPath, "serve", "--config", c.cfgPath)
	if err != nil {
		return fmt.Errorf("center %d: %w", c.idx, err)
	}
	c.cur, c.stopped, c.ending = p, false, false
	c.starts++
	start := c.starts
	go func() { // ends with the process
		<-p.done
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.cur == p && !c.ending {
			c.exits = append(c.exits, fmt.Sprintf("center %d (start %d) exited on its own: %v (see %s)", c.idx, start, p.err, c.logPath))
		}
	}()
	return nil
}

// unexpectedExits returns the exits of this center the soak did not cause.
func (c *centerProc) unexpectedExits() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.exits...)
}

// waitReady waits for /readyz.
func (c *centerProc) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.httpAddr+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("center %d not ready after %s (see %s)", c.idx, timeout, c.logPath)
		}
		time.Sleep(100 * time.Millisecond) // polling a readiness endpoint
	}
}

// kill SIGKILLs the running process; it fails when there is none (it
// exited on its own, which is recorded apart).
func (c *centerProc) kill() error {
	c.mu.Lock()
	p := c.cur
	if p == nil || p.exited() {
		c.mu.Unlock()
		return fmt.Errorf("center %d: not running", c.idx)
	}
	c.ending = true
	c.mu.Unlock()
	return p.kill()
}

func (c *centerProc) sigstop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || c.cur.exited() {
		return errors.New("not running")
	}
	c.stopped = true
	return c.cur.signal(syscall.SIGSTOP)
}

func (c *centerProc) sigcont() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = false
	if c.cur == nil {
		return nil
	}
	return c.cur.signal(syscall.SIGCONT)
}

func (c *centerProc) stop(grace time.Duration) error {
	c.mu.Lock()
	p := c.cur
	c.ending = true
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.stop(grace)
}

// crashed tells whether the process died on its own (not by our hand).
func (c *centerProc) crashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur != nil && c.cur.exited()
}

// scrapeSent reads eventcenter_forward_total{result="sent"} from /metrics.
func (c *centerProc) scrapeSent(ctx context.Context) (float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.httpAddr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape center %d: %w", c.idx, err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("scrape center %d: %w", c.idx, err)
	}
	total := 0.0
	if mf, ok := mfs["eventcenter_forward_total"]; ok {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "sent" {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
