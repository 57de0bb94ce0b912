package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/internal/progress"
	"github.com/eventcenter/eventcenter/store/migrate"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

// fakeClock is the progress printer's clock, moved by the test.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// printer returns a progress printer on out whose clock follows the
// reports' Elapsed (set it with at).
func printer(out *bytes.Buffer, terminal bool) (*progressPrinter, func(time.Duration)) {
	c := &fakeClock{time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	t0 := c.t
	pp := newProgressPrinter(out, progress.Options{Terminal: &terminal, Now: c.now})
	return pp, func(d time.Duration) { c.t = t0.Add(d) }
}

// Not on a terminal (a log, CI): one line per phase, one when built.
func TestProgressLinesNotTerminal(t *testing.T) {
	var out bytes.Buffer
	pp, set := printer(&out, false)
	p := migrate.Progress{Version: 2, Name: "orphan_commits", Index: "ix"}
	at := func(phase string, done, total int64, s int) migrate.Progress {
		q := p
		q.Phase, q.BlocksDone, q.BlocksTotal, q.Elapsed = phase, done, total, time.Duration(s)*time.Second
		set(q.Elapsed)
		return q
	}
	pp.report("postgres", at("waiting for writers before build", 0, 0, 0))
	pp.report("postgres", at("building index: scanning table", 100, 1000, 1))
	pp.report("postgres", at("building index: scanning table", 600, 1000, 3))
	pp.report("postgres", at("index validation: scanning table", 10, 1000, 3))
	done := at("index validation: scanning table", 1000, 1000, 5)
	done.Done = true
	pp.report("postgres", done)
	require.Equal(t, `postgres: 0002 orphan_commits: index ix: waiting for writers before build in 1s
postgres: 0002 orphan_commits: index ix: building index: scanning table: 600/1000 blocks in 2s (300 blocks/s)
postgres: 0002 orphan_commits: index ix: index validation: scanning table: 1000/1000 blocks in 2s (500 blocks/s)
postgres: 0002 orphan_commits: index ix: built in 5s
`, out.String())
}

// On a terminal: one redrawn line with done/total, rate and ETA.
func TestProgressLineTerminal(t *testing.T) {
	var out bytes.Buffer
	pp, set := printer(&out, true)
	p := migrate.Progress{Version: 2, Name: "orphan_commits", Index: "ix", Phase: "building index: scanning table", BlocksTotal: 1000}
	pp.report("postgres", p)
	p.BlocksDone, p.Elapsed = 300, time.Second
	set(p.Elapsed)
	pp.report("postgres", p)
	p.BlocksDone, p.Done, p.Elapsed = 1000, true, 2*time.Second
	set(p.Elapsed)
	pp.report("postgres", p)
	require.Equal(t, "\r\033[Kpostgres: 0002 orphan_commits: index ix: building index: scanning table: 0/1000 blocks (0%)"+
		"\r\033[Kpostgres: 0002 orphan_commits: index ix: building index: scanning table: 300/1000 blocks (30%), 300 blocks/s, ETA 2.3s"+
		"\r\033[Kpostgres: 0002 orphan_commits: index ix: building index: scanning table: 1000/1000 blocks (100%), 500 blocks/s"+
		"\r\033[Kpostgres: 0002 orphan_commits: index ix: building index: scanning table: 1000/1000 blocks in 2s (500 blocks/s)\n"+
		"postgres: 0002 orphan_commits: index ix: built in 2s\n", out.String())
}

// migrate --plan on a database at version 1 with rows lists the pending
// steps and changes nothing; migrate then builds the index and says so.
func TestMigratePlanPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	path := filepath.Join(t.TempDir(), "ec.yaml")
	require.NoError(t, os.WriteFile(path, []byte("store:\n  driver: postgres\n  dsn: "+dsn+"\n"), 0o600))
	out, err := run(t, "migrate", "--plan", "--config", path)
	require.NoError(t, err, out)
	require.Contains(t, out, "postgres: schema version 0, this binary's is")
	require.Contains(t, out, "  0001 init (one transaction)\n    CREATE TABLE eventcenter_messages (\n      locks: none (a new table) [online]\n")

	out, err = run(t, "migrate", "--config", path)
	require.NoError(t, err, out)
	pool, err := pgxpool.New(t.Context(), dsn)
	require.NoError(t, err)
	defer pool.Close()
	// Back to version 1, with 200,000 rows.
	_, err = pool.Exec(t.Context(), `DELETE FROM eventcenter_schema_migrations WHERE version >= 2;
		DROP INDEX eventcenter_messages_orphan_commits;
		DROP TABLE IF EXISTS eventcenter_instances;
		INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body, created_at, updated_at)
		SELECT 'b', 'k-' || g, 0, 2, g % 10 <> 0, now(), now() FROM generate_series(1, 200000) g;
		ANALYZE eventcenter_messages`)
	require.NoError(t, err)

	out, err = run(t, "migrate", "--plan", "--config", path)
	require.NoError(t, err, out)
	t.Log(out)
	require.Contains(t, out, "postgres: schema version 1, this binary's is")
	require.Contains(t, out, "  0002 orphan_commits (outside a transaction, statement by statement)\n"+
		"    CREATE INDEX CONCURRENTLY IF NOT EXISTS eventcenter_messages_orphan_commits\n"+
		"      locks: SHARE UPDATE EXCLUSIVE on eventcenter_messages: reads and writes go on; waits for the transactions running when it starts [online]\n"+
		"      table eventcenter_messages: ~200000 rows, ")
	require.Regexp(t, `~200000 rows, [0-9.]+ MiB; expected to take ~[0-9.]+m?s\n`, out)
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT max(version) FROM eventcenter_schema_migrations`).Scan(&n))
	require.Equal(t, 1, n, "--plan changed nothing")

	out, err = run(t, "migrate", "--config", path)
	require.NoError(t, err, out)
	require.Regexp(t, `postgres: 0002 orphan_commits: index eventcenter_messages_orphan_commits: built in [0-9.]+m?s\n`, out)
	require.Contains(t, out, "migrated postgres store")
	out, err = run(t, "migrate", "--plan", "--config", path)
	require.NoError(t, err, out)
	require.Regexp(t, `postgres: schema version \d+, nothing to apply`, out)
}
