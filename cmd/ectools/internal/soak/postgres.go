package soak

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCluster is a throwaway PostgreSQL cluster in a directory of its own.
// PostgreSQL refuses to run as root, so as root its commands run as the
// "postgres" user through runuser.
type pgCluster struct {
	bin    string
	dir    string
	port   int
	runAs  string // "" when not root
	logTo  string
	starts int
}

func newPGCluster(ctx context.Context, binDir, workDir string, port int) (*pgCluster, error) {
	if _, err := os.Stat(filepath.Join(binDir, "initdb")); err != nil {
		return nil, fmt.Errorf("postgres: initdb not found in %s: %w", binDir, err)
	}
	p := &pgCluster{bin: binDir, dir: filepath.Join(workDir, "pgdata"), port: port, logTo: filepath.Join(workDir, "postgres.log")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("postgres: running as root needs a postgres user: %w", err)
		}
		p.runAs = "postgres"
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		// The postgres user must reach the data directory and the log.
		if err := os.Chmod(workDir, 0o755); err != nil {
			return nil, fmt.Errorf("postgres: chmod work dir: %w", err)
		}
		if err := os.MkdirAll(p.dir, 0o700); err != nil {
			return nil, fmt.Errorf("postgres: data dir: %w", err)
		}
		if err := os.WriteFile(p.logTo, nil, 0o644); err != nil {
			return nil, fmt.Errorf("postgres: log file: %w", err)
		}
		for _, path := range []string{p.dir, p.logTo} {
			if err := os.Chown(path, uid, gid); err != nil {
				return nil, fmt.Errorf("postgres: chown %s: %w", path, err)
			}
		}
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
	return fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=64MB", p.port, p.dir)
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
	p.starts++
	return p.waitReady(ctx)
}

// restart stops the server abruptly (immediate mode: no checkpoint, every
// connection cut, crash recovery at start) and starts it again.
func (p *pgCluster) restart(ctx context.Context) error {
	if err := p.ctl(ctx, "-m", "immediate", "stop"); err != nil {
		return fmt.Errorf("postgres: stop for restart: %w", err)
	}
	return p.start(ctx)
}

func (p *pgCluster) stop(ctx context.Context) error {
	if err := p.ctl(ctx, "-m", "fast", "stop"); err != nil {
		return fmt.Errorf("postgres: stop: %w", err)
	}
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
