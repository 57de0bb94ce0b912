package zktest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Jars is the server's class path: Debian's zookeeper package installs
// zookeeper.jar, whose manifest names the jars it needs.
var Jars = []string{"/usr/share/java/zookeeper.jar"}

// logJar, when present (Debian's libslf4j-java, a dependency), gives the
// server a log for Log.
const logJar = "/usr/share/java/slf4j-simple.jar"

// Server is a ZooKeeper server started by Start.
type Server struct {
	// Addr is host:port of the client port on 127.0.0.1.
	Addr string

	t       testing.TB
	dir     string
	cfg     string
	cp      string
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	logFile string
}

// Start starts a standalone ZooKeeper on a free port of 127.0.0.1 with a
// tick of 100 ms (sessions may be as short as 200 ms) and stops it at
// cleanup. Without java or the zookeeper jars it skips the test, or fails
// it when CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		skip(t, "no java on PATH")
	}
	cp := classpath()
	if cp == "" {
		skip(t, "no "+strings.Join(Jars, " "))
	}
	dir := t.TempDir()
	port := freePort(t)
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), t: t, dir: dir, cp: cp,
		cfg: filepath.Join(dir, "zoo.cfg"), logFile: filepath.Join(dir, "server.log")}
	conf := fmt.Sprintf(`tickTime=100
minSessionTimeout=200
maxSessionTimeout=60000
initLimit=10
syncLimit=5
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok
maxClientCnxns=0
`, filepath.Join(dir, "data"), port)
	if err := os.WriteFile(s.cfg, []byte(conf), 0o644); err != nil {
		t.Fatalf("zktest: %v", err)
	}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func skip(t testing.TB, why string) {
	t.Helper()
	msg := "zktest: " + why + " (install ZooKeeper: apt-get install zookeeper)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; CI=true: ZooKeeper tests may not be skipped")
	}
	t.Skip(msg)
}

// classpath joins Jars, or "" when one is missing.
func classpath() string {
	for _, j := range Jars {
		if _, err := os.Stat(j); err != nil {
			return ""
		}
	}
	jars := Jars
	if _, err := os.Stat(logJar); err == nil {
		jars = append(jars[:len(jars):len(jars)], logJar)
	}
	return strings.Join(jars, string(os.PathListSeparator))
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs the server and waits until it answers.
func (s *Server) start() {
	t := s.t
	t.Helper()
	logf, err := os.OpenFile(s.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	cmd := exec.Command("java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.admin.enableServer=false", "-Dzookeeper.jmx.log4j.disable=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-cp", s.cp, "org.apache.zookeeper.server.ZooKeeperServerMain", s.cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		t.Fatalf("zktest: start ZooKeeper: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ruok(s.Addr) {
			return
		}
		select {
		case <-exited:
			t.Fatalf("zktest: ZooKeeper exited at start:\n%s", s.Log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			t.Fatalf("zktest: ZooKeeper did not answer within 60s:\n%s", s.Log())
		}
	}
}

// ruok asks the four-letter "ruok" and tells whether it answered imok.
func ruok(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("ruok")); err != nil {
		return false
	}
	b, _ := io.ReadAll(c)
	return string(b) == "imok"
}

// Stop kills the server (as a crash would) and waits for it to exit. Its
// data directory stays, for Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Restart starts the server again on the same port and data: the sessions
// it knew live on until they time out.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Log returns what the server printed.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logFile)
	return string(b)
}

// Connect opens a client session with addr (the server's, or a Proxy's)
// and waits until it has one; it is closed at cleanup.
func Connect(t testing.TB, addr string, sessionTimeout time.Duration) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, sessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatalf("zktest: connect %s: %v", addr, err)
	}
	t.Cleanup(conn.Close)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				// Drain the rest until the session closes (the client
				// drops events nobody reads, but they need not queue).
				go func() {
					for range events {
					}
				}()
				return conn
			}
		case <-timeout:
			t.Fatalf("zktest: no session with %s within 30s", addr)
		}
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// Provider is a Dubbo provider registered by Register.
type Provider struct {
	// Path is its node.
	Path string
	conn *zk.Conn
}

// Register registers a Dubbo provider of the URL u (tri://host:port/<interface>?version=..)
// under /dubbo/<interface>/providers, as an ephemeral node of a session of
// its own with addr, as Dubbo does; the interface is u's interface
// parameter, or its path. Unregister (or the end of the test) removes it.
func Register(t testing.TB, addr, u string) *Provider {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatalf("zktest: provider URL %q: %v", u, err)
	}
	iface := parsed.Query().Get("interface")
	if iface == "" {
		iface = strings.TrimPrefix(parsed.Path, "/")
	}
	conn := Connect(t, addr, 10*time.Second)
	dir := "/dubbo/" + iface + "/providers"
	EnsurePath(t, conn, dir)
	p := dir + "/" + url.QueryEscape(u)
	if _, err := conn.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("zktest: register %s: %v", p, err)
	}
	return &Provider{Path: p, conn: conn}
}

// Unregister ends the provider's session: its node goes at once.
func (p *Provider) Unregister() { p.conn.Close() }

// EnsurePath creates path and its parents (persistent) where missing.
func EnsurePath(t testing.TB, conn *zk.Conn, path string) {
	t.Helper()
	cur := ""
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("zktest: create %s: %v", cur, err)
		}
	}
}

// Proxy forwards TCP connections to a server until Cut.
type Proxy struct {
	// Addr is where clients connect.
	Addr string

	target string
	mu     sync.Mutex
	l      net.Listener
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// NewProxy starts a proxy to target on a free port; it stops at cleanup.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{target: target, conns: map[net.Conn]struct{}{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("zktest: proxy: %v", err)
	}
	p.Addr = l.Addr().String()
	p.serve(l)
	t.Cleanup(func() { p.Cut(); p.wg.Wait() })
	return p
}

func (p *Proxy) serve(l net.Listener) {
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = struct{}{}, struct{}{}
			p.mu.Unlock()
			for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
				p.wg.Add(1)
				go func() {
					defer p.wg.Done()
					_, _ = io.Copy(pair[0], pair[1])
					_ = pair[0].Close()
					_ = pair[1].Close()
				}()
			}
		}
	}()
}

// Cut closes every connection and stops accepting: the clients behind the
// proxy lose the server until Resume.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		_ = p.l.Close()
		p.l = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Resume accepts connections again on the same address.
func (p *Proxy) Resume(t testing.TB) {
	t.Helper()
	l, err := net.Listen("tcp", p.Addr)
	if err != nil {
		t.Fatalf("zktest: proxy resume: %v", err)
	}
	p.serve(l)
}
