package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// StandbyName is the application_name a Standby streams under; a
// synchronous Standby is named in the primary's synchronous_standby_names.
const StandbyName = "ec_standby"

// Standby makes a streaming standby of s (pg_basebackup of s into a new
// data directory, primary_conninfo to s, standby.signal) on a free port,
// starts it and waits until s streams to it. With sync, s's
// synchronous_standby_names names it, so that a commit on s returns only
// once the standby has it (synchronous_commit on: flushed to its WAL);
// without, replication is asynchronous. The standby stops at cleanup.
func (s *Server) Standby(t testing.TB, sync bool) *Server {
	t.Helper()
	return s.StandbyWith(t, StandbyOptions{Sync: sync})
}

// StandbyOptions are the choices of StandbyWith.
type StandbyOptions struct {
	// Sync names the standby in the primary's synchronous_standby_names.
	Sync bool
	// Lag delays the WAL the primary streams by this much: the standby's
	// primary_conninfo points at a delay line in front of the primary.
	// DropReplication drops what it holds, as when the primary's host dies
	// with WAL not yet delivered.
	Lag time.Duration
}

// StandbyWith is Standby with options.
func (s *Server) StandbyWith(t testing.TB, o StandbyOptions) *Server {
	t.Helper()
	sync := o.Sync
	work, err := os.MkdirTemp("", "eventcenter-pgstandby-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	sb := &Server{data: filepath.Join(work, "data"), log: filepath.Join(work, "log"), runAs: s.runAs}
	if err := os.WriteFile(sb.log, nil, 0o644); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if len(s.runAs) > 0 {
		// The data directory is made by pg_basebackup, as postgres.
		if out, err := exec.Command("chown", "postgres:", work, sb.log).CombinedOutput(); err != nil {
			t.Fatalf("pgtest: chown: %v: %s", err, out)
		}
	}
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", s.Port, StandbyName)
	sb.run(t, "pg_basebackup", "-d", conninfo, "-D", sb.data, "-X", "stream", "-R", "--no-sync", "-c", "fast")
	if o.Lag > 0 {
		link, err := newDelayLine(fmt.Sprintf("127.0.0.1:%d", s.Port), o.Lag)
		if err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		t.Cleanup(link.close)
		sb.link = link
		conninfo = fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", link.port(), StandbyName)
	}
	// -R wrote primary_conninfo and standby.signal; make sure the
	// application name the primary's synchronous_standby_names uses is in it.
	auto := filepath.Join(sb.data, "postgresql.auto.conf")
	conf, err := os.ReadFile(auto)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	conf = append(conf, []byte(fmt.Sprintf("primary_conninfo = '%s'\n", conninfo))...)
	if err := os.WriteFile(auto, conf, 0o600); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	sb.Port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	sb.Start(t)
	t.Cleanup(func() { sb.stop(nil) })

	names := ""
	if sync {
		names = StandbyName
	}
	s.exec(t, fmt.Sprintf("ALTER SYSTEM SET synchronous_standby_names = '%s'", names))
	s.exec(t, "SELECT pg_reload_conf()")
	want := "async"
	if sync {
		want = "sync"
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		state := s.query(t, "SELECT coalesce((SELECT sync_state FROM pg_stat_replication WHERE application_name = '"+StandbyName+"'), '')")
		if state == want {
			return sb
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgtest: standby on port %d never streamed %s from port %d (state %q)", sb.Port, want, s.Port, state)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's replication view
	}
}

// DropReplication closes a lagging standby's replication link (see
// StandbyOptions.Lag), dropping the WAL it delays, and refuses new
// connections: call it just before stopping the primary, so that the
// standby has exactly what reached it Lag before.
func (s *Server) DropReplication(t testing.TB) {
	t.Helper()
	if s.link == nil {
		t.Fatalf("pgtest: server on port %d has no delayed replication link", s.Port)
	}
	s.link.close()
}

// ReplayLag is the primary's pg_stat_replication.replay_lag of the
// standby, or "" while none was measured.
func (s *Server) ReplayLag(t testing.TB) string {
	t.Helper()
	return s.query(t, "SELECT coalesce((SELECT replay_lag::text FROM pg_stat_replication WHERE application_name = '"+StandbyName+"'), '')")
}

// WaitReplayed waits until the standby streaming from s (StandbyName) has
// replayed everything s had written when it was called.
func (s *Server) WaitReplayed(t testing.TB) {
	t.Helper()
	lsn := s.query(t, "SELECT pg_current_wal_lsn()::text")
	deadline := time.Now().Add(time.Minute)
	for s.query(t, "SELECT coalesce((SELECT (replay_lsn >= '"+lsn+"')::text FROM pg_stat_replication WHERE application_name = '"+StandbyName+"'), 'false')") != "true" {
		if time.Now().After(deadline) {
			t.Fatalf("pgtest: standby of port %d has not replayed %s after a minute", s.Port, lsn)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's replication view
	}
}

// Promote makes a standby a primary (pg_ctl promote) and waits until it
// accepts writes.
func (s *Server) Promote(t testing.TB) {
	t.Helper()
	s.run(t, "pg_ctl", "-D", s.data, "-w", "-t", "60", "promote")
	deadline := time.Now().Add(30 * time.Second)
	for s.query(t, "SELECT pg_is_in_recovery()::text") != "false" {
		if time.Now().After(deadline) {
			t.Fatalf("pgtest: server on port %d still in recovery after promote", s.Port)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's state
	}
}

// FailoverDSN is a DSN listing two servers, a primary and its standby in
// either order, for database "postgres" as superuser postgres, that
// connects only to the one that accepts writes
// (target_session_attrs=read-write): after a promotion the clients' new
// connections go to the new primary.
func FailoverDSN(first, second *Server) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=5",
		first.Port, second.Port)
}

func (s *Server) exec(t testing.TB, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		t.Fatalf("pgtest: connect to port %d: %v", s.Port, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: %s on port %d: %v", sql, s.Port, err)
	}
}

func (s *Server) query(t testing.TB, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		t.Fatalf("pgtest: connect to port %d: %v", s.Port, err)
	}
	defer conn.Close(context.Background())
	var out string
	if err := conn.QueryRow(ctx, sql).Scan(&out); err != nil {
		t.Fatalf("pgtest: %s on port %d: %v", sql, s.Port, err)
	}
	return strings.TrimSpace(out)
}
