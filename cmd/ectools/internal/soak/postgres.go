package soak

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCluster is a throwaway PostgreSQL cluster in a directory of its own.
// PostgreSQL refuses to run as root, so as root its commands run as the
// "postgres" user through runuser.
type pgCluster struct {
	bin string
	dir string
	// sock is the Unix socket directory, apart from the data directory:
	// a socket lock file in the data directory is copied by the next base
	// backup taken from it, and kept the node that once owned it from
	// starting on its port again while that old postmaster's PID lived
	// on (an unreaped zombie after a crash): "lock file already exists".
	sock     string
	port     int
	runAs    string // "" when not root
	uid, gid int
	logTo    string
	starts   int
	running  bool
}

// newPGNode prepares a cluster's data directory (empty) and log under
// workDir, named name; initdb or basebackup fills it.
func newPGNode(binDir, workDir, name string, port int) (*pgCluster, error) {
	if _, err := os.Stat(filepath.Join(binDir, "initdb")); err != nil {
		return nil, fmt.Errorf("postgres: initdb not found in %s: %w", binDir, err)
	}
	p := &pgCluster{bin: binDir, dir: filepath.Join(workDir, name), sock: filepath.Join(workDir, name+".sock"), port: port, logTo: filepath.Join(workDir, name+".log")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("postgres: running as root needs a postgres user: %w", err)
		}
		p.runAs = "postgres"
		p.uid, _ = strconv.Atoi(u.Uid)
		p.gid, _ = strconv.Atoi(u.Gid)
		// The postgres user must reach the data directory and the log.
		if err := os.Chmod(workDir, 0o755); err != nil {
			return nil, fmt.Errorf("postgres: chmod work dir: %w", err)
		}
	}
	if err := p.emptyDir(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(p.sock, 0o700); err != nil {
		return nil, fmt.Errorf("postgres: socket dir: %w", err)
	}
	if err := p.own(p.sock); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.logTo, nil, 0o644); err != nil {
		return nil, fmt.Errorf("postgres: log file: %w", err)
	}
	return p, p.own(p.logTo)
}

// emptyDir makes the data directory anew, empty, owned by the server's
// user.
func (p *pgCluster) emptyDir() error {
	if err := os.RemoveAll(p.dir); err != nil {
		return fmt.Errorf("postgres: remove data dir: %w", err)
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("postgres: data dir: %w", err)
	}
	return p.own(p.dir)
}

func (p *pgCluster) own(path string) error {
	if p.runAs == "" {
		return nil
	}
	if err := os.Chown(path, p.uid, p.gid); err != nil {
		return fmt.Errorf("postgres: chown %s: %w", path, err)
	}
	return nil
}

// newPGCluster makes a new primary cluster (initdb) in workDir/pgdata.
func newPGCluster(ctx context.Context, binDir, workDir string, port int) (*pgCluster, error) {
	p, err := newPGNode(binDir, workDir, "pgdata", port)
	if err != nil {
		return nil, err
	}
	if out, err := p.command(ctx, "initdb", "-D", p.dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("postgres: initdb: %w\n%s", err, out)
	}
	return p, nil
}

func (p *pgCluster) command(ctx context.Context, tool string, args ...string) *exec.Cmd {
	path := filepath.Join(p.bin, tool)
	if p.runAs != "" {
		return exec.CommandContext(ctx, "runuser", append([]string{"-u", p.runAs, "--", path}, args...)...)
	}
	return exec.CommandContext(ctx, path, args...)
}

func (p *pgCluster) serverOptions() string {
	// wal_keep_size: a standby behind a slow replication link catches up
	// from the primary's WAL rather than needing a new base backup.
	// fsync off: the soak crashes processes, never the machine, and what
	// a crashed server wrote is in the page cache; a failover's base
	// backup (a checkpoint) is then quick on a busy disk.
	return fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=64MB -c wal_keep_size=1GB -c fsync=off",
		p.port, p.sock)
}

// DSN is the superuser's URL.
func (p *pgCluster) DSN() string { return p.dsnAt(p.port) }

// dsnAt is DSN through another port (a center's fault point).
func (p *pgCluster) dsnAt(port int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
}

func (p *pgCluster) ctl(ctx context.Context, args ...string) error {
	out, err := p.command(ctx, "pg_ctl", append([]string{"-D", p.dir, "-w", "-t", "60"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %v: %w\n%s", args, err, out)
	}
	return nil
}

func (p *pgCluster) start(ctx context.Context) error {
	if err := p.ctl(ctx, "-o", p.serverOptions(), "-l", p.logTo, "start"); err != nil {
		return fmt.Errorf("postgres: start: %w", err)
	}
	p.running = true
	p.starts++
	return p.waitReady(ctx)
}

// restart stops the server abruptly (immediate mode: no checkpoint, every
// connection cut, crash recovery at start) and starts it again.
func (p *pgCluster) restart(ctx context.Context) error {
	if err := p.crash(ctx); err != nil {
		return fmt.Errorf("postgres: stop for restart: %w", err)
	}
	return p.start(ctx)
}

// crash stops the server in immediate mode (as a crash would).
func (p *pgCluster) crash(ctx context.Context) error {
	if err := p.ctl(ctx, "-m", "immediate", "stop"); err != nil {
		return fmt.Errorf("postgres: immediate stop: %w", err)
	}
	p.running = false
	return nil
}

func (p *pgCluster) stop(ctx context.Context) error {
	if !p.running {
		return nil
	}
	if err := p.ctl(ctx, "-m", "fast", "stop"); err != nil {
		return fmt.Errorf("postgres: stop: %w", err)
	}
	p.running = false
	return nil
}

func (p *pgCluster) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, p.DSN())
		if err == nil {
			_ = conn.Close(cctx)
			cancel()
			return nil
		}
		cancel()
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("postgres: not ready: %w", err)
		}
		time.Sleep(100 * time.Millisecond) // polling a server start, nothing to wait on
	}
}

// query runs one statement on this server and returns its first column
// as text ("" for a statement without rows).
func (p *pgCluster) query(ctx context.Context, sql string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, p.DSN())
	if err != nil {
		return "", fmt.Errorf("postgres: connect to port %d: %w", p.port, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(cctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return "", fmt.Errorf("postgres: %s on port %d: %w", sql, p.port, err)
	}
	defer rows.Close()
	out := ""
	if rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return "", fmt.Errorf("postgres: %s on port %d: %w", sql, p.port, err)
		}
		if len(vals) > 0 && vals[0] != nil {
			out = strings.TrimSpace(fmt.Sprint(vals[0]))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("postgres: %s on port %d: %w", sql, p.port, err)
	}
	return out, nil
}

// standbyName is the application_name the soak's standby streams under,
// the name the primary's synchronous_standby_names lists.
const standbyName = "ec_soak_standby"

// Standby modes of a soak (Config.Standby).
const (
	StandbyNone  = ""
	StandbySync  = "sync"
	StandbyAsync = "async"
)

// pgSet is the soak's PostgreSQL: one primary, or a primary and a
// streaming standby in two fixed slots (ports) whose roles swap at each
// failover. The standby streams through repl, a fault point the soak
// delays by lag (a standby that lags by a known amount).
type pgSet struct {
	nodes   []*pgCluster
	primary int // index in nodes
	sync    bool
	lag     time.Duration
	repl    *netProxy // the standby's link to the primary; nil without a standby
	out     func(format string, args ...any)
}

// newPGSet makes and starts the soak's PostgreSQL: a primary in
// workDir/pgdata, and with a standby mode a standby in workDir/pgdata-1.
func newPGSet(ctx context.Context, binDir, workDir, mode string, lag time.Duration, out func(string, ...any)) (set *pgSet, err error) {
	set = &pgSet{sync: mode == StandbySync, lag: lag, out: out}
	defer func() {
		if err != nil {
			set.stop(context.WithoutCancel(ctx))
		}
	}()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	primary, err := newPGCluster(ctx, binDir, workDir, port)
	if err != nil {
		return nil, err
	}
	set.nodes = append(set.nodes, primary)
	if err := primary.start(ctx); err != nil {
		return set, err
	}
	if mode == StandbyNone {
		return set, nil
	}
	if port, err = freePort(); err != nil {
		return set, err
	}
	sb, err := newPGNode(binDir, workDir, "pgdata-1", port)
	if err != nil {
		return set, err
	}
	set.nodes = append(set.nodes, sb)
	return set, set.attachStandby(ctx, 1)
}

// primaryNode and standbyNode are the nodes in those roles now.
func (s *pgSet) primaryNode() *pgCluster { return s.nodes[s.primary] }

// ports are the nodes' ports, slot by slot.
func (s *pgSet) ports() []int {
	out := make([]int, len(s.nodes))
	for i, n := range s.nodes {
		out[i] = n.port
	}
	return out
}

// DSN reaches whichever node accepts writes, directly.
func (s *pgSet) DSN() string { return dsnFor(s.ports()) }

// dsnFor is the superuser's URL listing every host:port, connecting only
// to the one that accepts writes when there are several.
func dsnFor(ports []int) string {
	hosts := make([]string, len(ports))
	for i, p := range ports {
		hosts[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	dsn := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", strings.Join(hosts, ","))
	if len(ports) > 1 {
		dsn += "&target_session_attrs=read-write&connect_timeout=5"
	}
	return dsn
}

// attachStandby makes node i a streaming standby of the primary: a base
// backup of the primary into its emptied directory, primary_conninfo
// through a new replication fault point (delayed by lag, toward the
// standby), standby.signal; it starts it, waits until the primary streams
// to it and, synchronous, names it in synchronous_standby_names.
func (s *pgSet) attachStandby(ctx context.Context, i int) error {
	p, sb := s.primaryNode(), s.nodes[i]
	if s.repl != nil {
		_ = s.repl.close()
	}
	repl, err := newNetProxy("standby - primary", fmt.Sprintf("127.0.0.1:%d", p.port))
	if err != nil {
		return err
	}
	s.repl = repl
	if s.lag > 0 {
		repl.degrade(toCenter, s.lag, 0)
	}
	if err := sb.emptyDir(); err != nil {
		return err
	}
	direct := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", p.port, standbyName)
	if out, err := sb.command(ctx, "pg_basebackup", "-d", direct, "-D", sb.dir, "-X", "stream", "-R", "--no-sync", "-c", "fast").CombinedOutput(); err != nil {
		return fmt.Errorf("postgres: pg_basebackup from port %d: %w\n%s", p.port, err, out)
	}
	// -R wrote standby.signal and a primary_conninfo to the primary
	// itself; the line added last wins.
	auto := filepath.Join(sb.dir, "postgresql.auto.conf")
	conf, err := os.ReadFile(auto)
	if err != nil {
		return fmt.Errorf("postgres: standby config: %w", err)
	}
	conf = fmt.Appendf(conf, "primary_conninfo = 'host=127.0.0.1 port=%d user=postgres application_name=%s'\nsynchronous_standby_names = ''\n",
		repl.Port(), standbyName)
	if err := os.WriteFile(auto, conf, 0o600); err != nil {
		return fmt.Errorf("postgres: standby config: %w", err)
	}
	if err := sb.own(auto); err != nil {
		return err
	}
	if err := sb.start(ctx); err != nil {
		return err
	}
	if err := s.waitReplication(ctx, "streaming", "state"); err != nil {
		return err
	}
	if !s.sync {
		return nil
	}
	if _, err := p.query(ctx, "ALTER SYSTEM SET synchronous_standby_names = '"+standbyName+"'"); err != nil {
		return err
	}
	if _, err := p.query(ctx, "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	return s.waitReplication(ctx, "sync", "sync_state")
}

// waitReplication waits until the primary's pg_stat_replication row of
// the standby has column col = want.
func (s *pgSet) waitReplication(ctx context.Context, want, col string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := s.primaryNode().query(ctx, "SELECT coalesce((SELECT "+col+" FROM pg_stat_replication WHERE application_name = '"+standbyName+"'), '')")
		if err == nil && got == want {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("postgres: standby %s not %s after 2m (got %q, %v)", col, want, got, err)
		}
		time.Sleep(100 * time.Millisecond) // polling the server's replication view
	}
}

// failover crashes the primary (immediate stop) and promotes the standby;
// promoted is when the new primary accepted writes. Then it makes the old
// primary's slot a standby of the new one (a new base backup), so the
// next failover can happen. The replication link is cut before the crash
// and its connections closed after, so what it held (up to lag of WAL)
// is lost with the primary, as when a primary's host dies.
func (s *pgSet) failover(ctx context.Context) (promoted time.Time, err error) {
	if len(s.nodes) < 2 {
		return time.Time{}, errors.New("postgres: failover without a standby")
	}
	old, next := s.primary, 1-s.primary
	s.repl.cut(bothWays)
	if err := s.nodes[old].crash(ctx); err != nil {
		return time.Time{}, err
	}
	_ = s.repl.close()
	s.repl = nil
	if err := s.nodes[next].ctl(ctx, "promote"); err != nil {
		return time.Time{}, fmt.Errorf("postgres: promote: %w", err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		state, err := s.nodes[next].query(ctx, "SELECT pg_is_in_recovery()::text")
		if err == nil && state == "false" {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("postgres: port %d still in recovery a minute after promote (%v)", s.nodes[next].port, err)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's state
	}
	promoted = time.Now()
	s.primary = next
	return promoted, s.attachStandby(ctx, old)
}

// restart restarts the primary abruptly.
func (s *pgSet) restart(ctx context.Context) error { return s.primaryNode().restart(ctx) }

// stop stops every node and the replication link.
func (s *pgSet) stop(ctx context.Context) {
	if s.repl != nil {
		_ = s.repl.close()
	}
	for _, n := range s.nodes {
		if err := n.stop(ctx); err != nil && s.out != nil {
			s.out("%v", err)
		}
	}
}
