package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/migrate"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/testsupport/onlinetest"
)

// fillMessages adds n rows to eventcenter_messages in one statement, a
// tenth of them orphan COMMITs (status 2 without body).
func fillMessages(t testing.TB, pool *pgxpool.Pool, n int) {
	t.Helper()
	_, err := pool.Exec(t.Context(), `INSERT INTO eventcenter_messages
		(biz_id, message_key, partition, status, has_body, payload, topic, created_at, updated_at, send_next_at)
		SELECT 'fill', 'k-' || g, g % 16, CASE WHEN g % 10 = 0 THEN 2 ELSE 1 END, g % 10 <> 0,
		       'payload', 'orders.events', now(), now(), now()
		FROM generate_series(1, $1) AS g`, n)
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `ANALYZE eventcenter_messages`)
	require.NoError(t, err)
}

// startInserts inserts one message at a time on one connection, as ingest
// does, and probes that backend's wait_event_type in pg_stat_activity for
// lock waits (testsupport/onlinetest).
func startInserts(t *testing.T, pool *pgxpool.Pool, prefix string) *onlinetest.Inserts {
	t.Helper()
	conn, err := pool.Acquire(t.Context())
	require.NoError(t, err)
	t.Cleanup(conn.Release)
	var pid int32
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid))
	return onlinetest.Start(t, func(ctx context.Context, i int) error {
		_, err := conn.Exec(ctx, `INSERT INTO eventcenter_messages
			(biz_id, message_key, partition, status, created_at, updated_at) VALUES ('live', $1, 0, 1, now(), now())`,
			fmt.Sprintf("%s-%d", prefix, i))
		return err
	}, func(ctx context.Context) (bool, error) {
		var lock bool
		err := pool.QueryRow(ctx, `SELECT coalesce(wait_event_type = 'Lock', false)
			FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&lock)
		return lock, err
	})
}

// TestMigrationsOnline applies each migration after the first (which
// creates the tables) to a table of many rows while another connection
// inserts: no insert waits as long as the lock timeout, nor half as long as
// the step (a plain CREATE INDEX blocks the inserts for its whole build).
func TestMigrationsOnline(t *testing.T) {
	t.Parallel()
	ms, err := postgres.Migrations()
	require.NoError(t, err)
	for _, m := range ms[1:] {
		t.Run(fmt.Sprintf("%04d_%s", m.Version, m.Name), func(t *testing.T) {
			t.Parallel()
			pool := pgtest.Pool(t)
			opts := postgres.MigrateOptions{Logger: quiet}
			require.NoError(t, postgres.MigrateSteps(t.Context(), pool, ms[:m.Version-1], opts))
			fillMessages(t, pool, 300_000)
			in := startInserts(t, pool, "during")
			time.Sleep(50 * time.Millisecond)
			start := time.Now()
			require.NoError(t, postgres.MigrateSteps(t.Context(), pool, ms[:m.Version], opts))
			took := time.Since(start)
			time.Sleep(50 * time.Millisecond)
			// A plain CREATE INDEX blocks the inserts for its whole build
			// (TestOnlineCheckCatchesABlockingStep); a wait under 50 ms
			// blocks nothing that matters.
			in.RequireOnline(t, took, postgres.DefaultLockTimeout, 50*time.Millisecond)
			require.NoError(t, postgres.CheckSchemaUpTo(t.Context(), pool, m.Version))
		})
	}
}

// The check above can fail: a step that builds an index without
// CONCURRENTLY holds the inserts behind its SHARE lock for the whole build.
func TestOnlineCheckCatchesABlockingStep(t *testing.T) {
	t.Parallel()
	ms, err := postgres.Migrations()
	require.NoError(t, err)
	pool := pgtest.Pool(t)
	opts := postgres.MigrateOptions{Logger: quiet}
	require.NoError(t, postgres.MigrateSteps(t.Context(), pool, ms, opts))
	fillMessages(t, pool, 300_000)
	blocking := migrate.Migration{Version: len(ms) + 1, Name: "plain_index",
		SQL: "CREATE INDEX test_plain_idx ON eventcenter_messages (md5(payload || message_key));"}
	in := startInserts(t, pool, "blocked")
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	require.NoError(t, postgres.MigrateSteps(t.Context(), pool, append(append([]migrate.Migration(nil), ms...), blocking), opts))
	took := time.Since(start)
	time.Sleep(50 * time.Millisecond)
	in.RequireBlocked(t, took)
}

// A concurrent build that failed leaves an INVALID index of the same name;
// CREATE INDEX CONCURRENTLY IF NOT EXISTS alone would keep it. The runner
// drops it and builds the real one.
func TestMigrateRebuildsInvalidIndex(t *testing.T) {
	t.Parallel()
	ms, err := postgres.Migrations()
	require.NoError(t, err)
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.MigrateSteps(t.Context(), pool, ms[:1], postgres.MigrateOptions{Logger: quiet}))
	fillMessages(t, pool, 1000)
	// An expression that fails on a status-2 row: the build errors out and
	// leaves the index INVALID, as an interrupted build would.
	_, err = pool.Exec(t.Context(), `CREATE INDEX CONCURRENTLY eventcenter_messages_orphan_commits
		ON eventcenter_messages ((1 / (status - 2)))`)
	require.ErrorContains(t, err, "division by zero")
	require.Equal(t, "invalid", indexState(t, pool, "eventcenter_messages_orphan_commits"))

	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	require.NoError(t, postgres.MigrateSteps(t.Context(), pool, ms[:2], postgres.MigrateOptions{Logger: log}))
	require.Equal(t, "valid", indexState(t, pool, "eventcenter_messages_orphan_commits"))
	var def string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT pg_get_indexdef('eventcenter_messages_orphan_commits'::regclass)`).Scan(&def))
	require.Contains(t, def, "(biz_id, created_at) WHERE ((status = 2) AND (NOT has_body))")
	require.Contains(t, logs.String(), "dropping an invalid index")
}

// The index of the PREPARED rows by partition, which no claim reads any
// more, is dropped from a database the release before migrated (with rows
// in it); the index the check-back claims read stays.
func TestMigrateDropsTheCheckbackIndexByPartition(t *testing.T) {
	t.Parallel()
	ms, err := postgres.Migrations()
	require.NoError(t, err)
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.MigrateSteps(t.Context(), pool, ms[:9], postgres.MigrateOptions{Logger: quiet}))
	fillMessages(t, pool, 1000)
	require.Equal(t, "valid", indexState(t, pool, "eventcenter_messages_verify_due"))

	require.NoError(t, postgres.MigrateSteps(t.Context(), pool, ms, postgres.MigrateOptions{Logger: quiet}))
	require.Contains(t, indexState(t, pool, "eventcenter_messages_verify_due"), "missing")
	require.Equal(t, "valid", indexState(t, pool, "eventcenter_messages_verify_due_biz"))
}

func indexState(t *testing.T, pool *pgxpool.Pool, name string) string {
	t.Helper()
	var valid bool
	err := pool.QueryRow(t.Context(), `SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, name).Scan(&valid)
	if err != nil {
		return "missing: " + err.Error()
	}
	if valid {
		return "valid"
	}
	return "invalid"
}

// holdLock takes lock on eventcenter_messages in another transaction and
// holds it for d.
func holdLock(t *testing.T, pool *pgxpool.Pool, mode string, d time.Duration) <-chan struct{} {
	t.Helper()
	tx, err := pool.Begin(t.Context())
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), `LOCK TABLE eventcenter_messages IN `+mode+` MODE`)
	require.NoError(t, err)
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(d)
		_ = tx.Rollback(context.WithoutCancel(t.Context()))
	}()
	t.Cleanup(func() { <-released })
	return released
}

// A step whose lock is held by a long transaction waits at most the lock
// timeout per try, so the inserts queued behind it wait no longer; it is
// tried again until the holder is gone, or gives up after Tries.
func TestMigrateLockTimeoutRetry(t *testing.T) {
	t.Parallel()
	ms, err := postgres.Migrations()
	require.NoError(t, err)
	steps := map[string]migrate.Migration{
		// ACCESS EXCLUSIVE, blocked by the reader's ACCESS SHARE.
		"transaction": {Version: len(ms) + 1, Name: "add_column",
			SQL: "ALTER TABLE eventcenter_messages ADD COLUMN IF NOT EXISTS test_col integer;"},
		// SHARE UPDATE EXCLUSIVE, blocked by another one.
		"no-transaction": {Version: len(ms) + 1, Name: "index", NoTransaction: true,
			SQL: "CREATE INDEX CONCURRENTLY IF NOT EXISTS test_idx ON eventcenter_messages (tag);"},
	}
	holders := map[string]string{"transaction": "ACCESS SHARE", "no-transaction": "SHARE UPDATE EXCLUSIVE"}
	for name, step := range steps {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			all := append(append([]migrate.Migration(nil), ms...), step)
			t.Run("retries", func(t *testing.T) {
				pool := pgtest.Pool(t)
				require.NoError(t, postgres.MigrateSteps(t.Context(), pool, ms, postgres.MigrateOptions{Logger: quiet}))
				var logs bytes.Buffer
				opts := postgres.MigrateOptions{LockTimeout: 200 * time.Millisecond, Backoff: 100 * time.Millisecond, Tries: 30,
					Logger: slog.New(slog.NewTextHandler(&logs, nil))}
				released := holdLock(t, pool, holders[name], 1500*time.Millisecond)
				in := startInserts(t, pool, "retry")
				require.NoError(t, postgres.MigrateSteps(t.Context(), pool, all, opts))
				select {
				case <-released:
				default:
					t.Fatal("the step finished while the conflicting lock was held")
				}
				in.Finish()
				in.RequireNoErrors(t)
				t.Logf("%d inserts, the longest %s, at most %s waiting for a lock at once", in.Count(), in.Longest(), in.LongestLockWait())
				// The lock wait, not the insert's duration: a loaded
				// machine stretches an insert without any lock held.
				require.Less(t, in.LongestLockWait(), 200*time.Millisecond+300*time.Millisecond,
					"an insert queued behind the step's lock request for longer than its lock timeout")
				require.Contains(t, logs.String(), "trying again")
				require.NoError(t, postgres.CheckSchemaUpTo(t.Context(), pool, step.Version))
			})
			t.Run("gives up", func(t *testing.T) {
				pool := pgtest.Pool(t)
				require.NoError(t, postgres.MigrateSteps(t.Context(), pool, ms, postgres.MigrateOptions{Logger: quiet}))
				opts := postgres.MigrateOptions{LockTimeout: 100 * time.Millisecond, Backoff: 50 * time.Millisecond, Tries: 2, Logger: quiet}
				holdLock(t, pool, holders[name], 2*time.Second)
				err := postgres.MigrateSteps(t.Context(), pool, all, opts)
				require.ErrorContains(t, err, "gave up after 2 tries")
				require.ErrorContains(t, err, "lock timeout")
				require.Error(t, postgres.CheckSchemaUpTo(t.Context(), pool, step.Version), "not recorded")
				// The session's lock_timeout and advisory lock did not stay on a pooled connection.
				var lt string
				require.NoError(t, pool.QueryRow(t.Context(), `SHOW lock_timeout`).Scan(&lt))
				require.Equal(t, "0", lt)
			})
		})
	}
}

// The plan lists the pending steps with their locks, the table's size and
// an estimate; the estimate is within a factor of 5 of the build it
// announces (the table in cache, as here).
func TestPlan(t *testing.T) {
	t.Parallel()
	ms, err := postgres.Migrations()
	require.NoError(t, err)
	pool := pgtest.Pool(t)
	cur, latest, steps, err := postgres.Plan(t.Context(), pool)
	require.NoError(t, err)
	require.Equal(t, 0, cur)
	require.Equal(t, len(ms), latest)
	require.Len(t, steps, len(ms))
	require.Equal(t, "none (a new table)", steps[0].Statements[0].Lock)
	emptyEstimate := steps[1].Statements[0].Estimate // 0002's index, planned before the table exists

	require.NoError(t, postgres.MigrateSteps(t.Context(), pool, ms[:1], postgres.MigrateOptions{Logger: quiet}))
	fillMessages(t, pool, 300_000)
	cur, _, steps, err = postgres.Plan(t.Context(), pool)
	require.NoError(t, err)
	require.Equal(t, 1, cur)
	require.Len(t, steps, len(ms)-1)
	idx := steps[0].Statements[0]
	require.Equal(t, 2, steps[0].Version)
	require.True(t, steps[0].NoTransaction)
	require.Equal(t, "eventcenter_messages", idx.Table)
	require.False(t, idx.Blocks)
	require.Contains(t, idx.Lock, "SHARE UPDATE EXCLUSIVE")
	require.InDelta(t, 300_000, idx.Rows, 30_000)
	require.Positive(t, idx.Bytes)

	start := time.Now()
	require.NoError(t, postgres.MigrateSteps(t.Context(), pool, ms[:2], postgres.MigrateOptions{Logger: quiet}))
	took := time.Since(start)
	// How close the estimate comes is a figure for migrate --plan's
	// users, not an assertion: a loaded machine builds the index several
	// times slower. The estimate grows with the table.
	t.Logf("0002 on %d rows, %d bytes: estimated %s, took %s", idx.Rows, idx.Bytes, idx.Estimate, took)
	require.Greater(t, idx.Estimate, emptyEstimate)

	require.NoError(t, postgres.MigrateSteps(t.Context(), pool, ms, postgres.MigrateOptions{Logger: quiet}))
	cur, _, steps, err = postgres.Plan(t.Context(), pool)
	require.NoError(t, err)
	require.Equal(t, len(ms), cur)
	require.Empty(t, steps)
}
