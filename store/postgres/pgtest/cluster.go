package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Bin holds the PostgreSQL server binaries (initdb, pg_ctl) Cluster uses.
const Bin = "/usr/lib/postgresql/15/bin"

// Server is a throwaway PostgreSQL cluster started by Cluster.
type Server struct {
	// Port is the TCP port on 127.0.0.1.
	Port  int
	data  string
	log   string
	runAs []string
	// link is a standby's delayed replication link (StandbyOptions.Lag).
	link *delayLine
}

// DSN returns a URL for database "postgres" as superuser postgres (trust).
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
}

// Cluster starts a PostgreSQL cluster (initdb into a temporary directory,
// a free port, trust authentication) that stops at cleanup. Without the
// binaries in Bin it skips the test, or fails it when CI=true.
func Cluster(t testing.TB) *Server {
	t.Helper()
	skip := func(msg string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: PostgreSQL cluster tests may not be skipped)")
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(filepath.Join(Bin, "initdb")); err != nil {
		skip("no PostgreSQL binaries in " + Bin)
	}
	work, err := os.MkdirTemp("", "ec-pgcluster-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	s := &Server{data: filepath.Join(work, "data"), log: filepath.Join(work, "log")}
	chown := func(string) {}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			skip("running as root needs a postgres user")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.runAs = []string{"runuser", "-u", "postgres", "--"}
		chown = func(path string) {
			if err := os.Chown(path, uid, gid); err != nil {
				t.Fatalf("pgtest: %v", err)
			}
		}
	}
	if err := os.MkdirAll(s.data, 0o700); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	chown(s.data)
	if err := os.WriteFile(s.log, nil, 0o644); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	chown(s.log)
	s.run(t, "initdb", "-D", s.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s.Start(t)
	t.Cleanup(func() { s.stop(nil) })
	return s
}

// Start starts the cluster (after Stop) and waits until it accepts
// connections.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	s.run(t, "pg_ctl", "-D", s.data, "-w", "-t", "60", "-l", s.log, "-o",
		fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=60 -c fsync=off", s.Port, s.data), "start")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, s.DSN())
		if err == nil {
			_ = conn.Close(ctx)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pgtest: cluster on port %d does not accept connections: %v", s.Port, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops the cluster at once (pg_ctl -m immediate: like a crash).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.stop(t)
}

// Restart stops the cluster at once and starts it again.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop(t)
	s.Start(t)
}

func (s *Server) stop(t testing.TB) {
	argv := append(append([]string{}, s.runAs...), filepath.Join(Bin, "pg_ctl"), "-D", s.data, "-m", "immediate", "-w", "stop")
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil && t != nil {
		t.Fatalf("pgtest: pg_ctl stop: %v: %s", err, out)
	}
}

func (s *Server) run(t testing.TB, tool string, args ...string) {
	t.Helper()
	argv := append(append(append([]string{}, s.runAs...), filepath.Join(Bin, tool)), args...)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("pgtest: %s: %v: %s", tool, err, out)
	}
}
