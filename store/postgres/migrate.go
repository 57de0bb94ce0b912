package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/migrate"
)

// MigrateOptions tune how Migrate applies steps while centers keep running.
// The zero value is usable.
type MigrateOptions struct {
	// LockTimeout bounds every lock wait of every statement (SET
	// lock_timeout): a statement waiting for a lock also makes the inserts
	// queued behind it wait, so this is the longest such a step can stall
	// ingest. 0 means DefaultLockTimeout.
	LockTimeout time.Duration
	// Tries is how often a statement is tried when it timed out on a lock
	// (or was chosen as a deadlock victim); 0 means 10.
	Tries int
	// Backoff is the first wait between tries, doubled each try up to 16
	// times itself; 0 means 250ms.
	Backoff time.Duration
	// Progress, when set, receives the progress of long statements
	// (concurrent index builds, from pg_stat_progress_create_index) every
	// ProgressInterval, and a last report with Done set.
	Progress func(migrate.Progress)
	// ProgressInterval; 0 means 1s.
	ProgressInterval time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// DefaultLockTimeout is MigrateOptions.LockTimeout's default.
const DefaultLockTimeout = time.Second

func (o *MigrateOptions) defaults() {
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.Tries <= 0 {
		o.Tries = 10
	}
	if o.Backoff <= 0 {
		o.Backoff = 250 * time.Millisecond
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Migrate applies the embedded migrations not yet applied with the default
// MigrateOptions; see MigrateWith.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return MigrateWith(ctx, pool, MigrateOptions{})
}

// MigrateWith applies the embedded migrations not yet applied, in the schema
// the pool's search_path selects, under a session advisory lock (several
// instances may run it at once; the others wait and then find nothing to
// do). Centers may keep running meanwhile:
//
//   - every statement runs with lock_timeout = LockTimeout and is tried
//     again (Tries, with backoff) when it times out, so it never holds up
//     the inserts queued behind its lock request for longer than that;
//   - a step is one transaction (its statements and its version row), unless
//     its file starts with migrate.NoTransactionMarker: then each statement
//     runs on its own, and the version row is written after the last one.
//     CREATE INDEX CONCURRENTLY needs this; before building such an index,
//     an INVALID index of that name (left by a build that failed or was
//     interrupted) is dropped CONCURRENTLY, and after the build the index
//     must be valid.
func MigrateWith(ctx context.Context, pool *pgxpool.Pool, opts MigrateOptions) error {
	opts.defaults()
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	if err := migrateSteps(ctx, pool, ms, opts); err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	return nil
}

// migrateSteps is MigrateWith on the given steps (tests give their own).
func migrateSteps(ctx context.Context, pool *pgxpool.Pool, ms []migrate.Migration, opts MigrateOptions) (err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	clean := false
	defer func() {
		if !clean {
			// The session may still hold the advisory lock or our
			// lock_timeout: never give it back to the pool.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = conn.Conn().Close(cctx)
			cancel()
		}
		conn.Release()
	}()
	if err := takeMigrationLock(ctx, conn.Conn(), opts.Logger); err != nil {
		return err
	}
	runErr := runSteps(ctx, conn.Conn(), pool, ms, opts)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, uerr := conn.Exec(rctx, `SELECT pg_advisory_unlock(hashtext('eventcenter_migrate:' || current_schema()))`)
	_, rerr := conn.Exec(rctx, `RESET lock_timeout`)
	clean = uerr == nil && rerr == nil
	return runErr
}

// takeMigrationLock takes the session advisory lock, polling: a session
// blocked in pg_advisory_lock is a running transaction, which a concurrent
// index build of the holder waits for, a deadlock.
func takeMigrationLock(ctx context.Context, conn *pgx.Conn, log *slog.Logger) error {
	wait := 50 * time.Millisecond
	for logged := false; ; {
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext('eventcenter_migrate:' || current_schema()))`).Scan(&got); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if got {
			return nil
		}
		if !logged {
			log.Info("another migration is running; waiting for it")
			logged = true
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("take the migration lock: %w", ctx.Err())
		case <-t.C:
		}
		wait = min(wait*2, time.Second)
	}
}

func runSteps(ctx context.Context, conn *pgx.Conn, pool *pgxpool.Pool, ms []migrate.Migration, opts MigrateOptions) error {
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migrate.Table+` (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("create %s: %w", migrate.Table, err)
	}
	var cur int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+migrate.Table).Scan(&cur); err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", opts.LockTimeout.Milliseconds())); err != nil {
		return fmt.Errorf("set lock_timeout: %w", err)
	}
	for _, m := range ms {
		if m.Version <= cur {
			continue
		}
		start := time.Now()
		var err error
		if m.NoTransaction {
			err = runOutsideTx(ctx, conn, pool, m, opts)
		} else {
			err = retryLocks(ctx, opts, m, "", func() error {
				return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, m.SQL); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, `INSERT INTO `+migrate.Table+` (version, name) VALUES ($1, $2)`, m.Version, m.Name)
					return err
				})
			})
		}
		if err != nil {
			return fmt.Errorf("migration %d %s: %w", m.Version, m.Name, err)
		}
		opts.Logger.Info("migration applied", "version", m.Version, "name", m.Name, "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// runOutsideTx applies a no-transaction step statement by statement; each
// must be safe to run again (a failed try is tried again, and a failed run
// is run again from its first statement).
func runOutsideTx(ctx context.Context, conn *pgx.Conn, pool *pgxpool.Pool, m migrate.Migration, opts MigrateOptions) error {
	for _, stmt := range m.Statements() {
		idx := concurrentIndex(stmt)
		err := retryLocks(ctx, opts, m, stmt, func() error {
			if idx == "" {
				_, err := conn.Exec(ctx, stmt)
				return err
			}
			if err := dropInvalidIndex(ctx, conn, idx, opts.Logger); err != nil {
				return err
			}
			stop := watchProgress(ctx, pool, conn.PgConn().PID(), m, idx, opts)
			_, err := conn.Exec(ctx, stmt)
			stop()
			if err != nil {
				return err
			}
			valid, found, err := indexValid(ctx, conn, idx)
			if err != nil {
				return err
			}
			if !found || !valid {
				return fmt.Errorf("index %s is missing or invalid after its build", idx)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	_, err := conn.Exec(ctx, `INSERT INTO `+migrate.Table+` (version, name) VALUES ($1, $2)`, m.Version, m.Name)
	if err != nil {
		return fmt.Errorf("record the version: %w", err)
	}
	return nil
}

// retryLocks runs f until it succeeds, fails other than on a lock timeout
// or deadlock, or opts.Tries tries are used.
func retryLocks(ctx context.Context, opts MigrateOptions, m migrate.Migration, stmt string, f func() error) error {
	return migrate.LockRetry{
		Tries: opts.Tries, Backoff: opts.Backoff, Retryable: lockRetryable,
		Waited: "lock_timeout " + opts.LockTimeout.String() + " for a lock (see pg_stat_activity)",
		OnRetry: func(try int, wait time.Duration, err error) {
			opts.Logger.Warn("migration step waited too long for a lock; trying again", "version", m.Version, "name", m.Name,
				"statement", stmtFirstLine(stmt), "try", try, "wait", wait, "err", err)
		},
	}.Do(ctx, f)
}

// lockRetryable: lock_not_available (lock_timeout) or deadlock_detected.
func lockRetryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "55P03" || pgErr.Code == "40P01")
}

func stmtFirstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

var concurrentIndexRE = regexp.MustCompile(`(?is)^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+(?:IF\s+NOT\s+EXISTS\s+)?("?[A-Za-z_][A-Za-z0-9_$]*"?)\s+ON\b`)

// concurrentIndex returns the name of the index a CREATE INDEX CONCURRENTLY
// statement builds, or "".
func concurrentIndex(stmt string) string {
	m := concurrentIndexRE.FindStringSubmatch(stmt)
	if m == nil {
		return ""
	}
	return strings.Trim(m[1], `"`)
}

// indexValid reports whether the index exists in the current schema and is
// valid (pg_index.indisvalid).
func indexValid(ctx context.Context, conn *pgx.Conn, name string) (valid, found bool, err error) {
	err = conn.QueryRow(ctx, `SELECT i.indisvalid FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, name).Scan(&valid)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("look up index %s: %w", name, err)
	}
	return valid, true, nil
}

// dropInvalidIndex drops the index when a concurrent build left it INVALID
// (CREATE INDEX CONCURRENTLY IF NOT EXISTS would keep it as it is).
func dropInvalidIndex(ctx context.Context, conn *pgx.Conn, name string, log *slog.Logger) error {
	valid, found, err := indexValid(ctx, conn, name)
	if err != nil || !found || valid {
		return err
	}
	log.Warn("dropping an invalid index left by an interrupted concurrent build", "index", name)
	if _, err := conn.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("drop invalid index %s: %w", name, err)
	}
	return nil
}

// watchProgress reports pg_stat_progress_create_index for the backend pid
// every opts.ProgressInterval until the returned stop is called (which
// waits for the reporting goroutine and sends the Done report).
func watchProgress(ctx context.Context, pool *pgxpool.Pool, pid uint32, m migrate.Migration, idx string, opts MigrateOptions) (stop func()) {
	if opts.Progress == nil {
		return func() {}
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	last := migrate.Progress{Version: m.Version, Name: m.Name, Index: idx}
	wg.Go(func() {
		t := time.NewTicker(opts.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			p := migrate.Progress{Version: m.Version, Name: m.Name, Index: idx}
			err := pool.QueryRow(ctx, `SELECT phase, blocks_done, blocks_total, tuples_done, tuples_total
				FROM pg_stat_progress_create_index WHERE pid = $1`, int32(pid)).
				Scan(&p.Phase, &p.BlocksDone, &p.BlocksTotal, &p.TuplesDone, &p.TuplesTotal)
			if err != nil {
				continue // not started yet, finished, or the pool is busy: next tick
			}
			p.Elapsed = time.Since(start)
			mu.Lock()
			last = p
			mu.Unlock()
			opts.Progress(p)
		}
	})
	return func() {
		cancel()
		wg.Wait()
		mu.Lock()
		p := last
		mu.Unlock()
		p.Elapsed = time.Since(start)
		p.Done = true
		opts.Progress(p)
	}
}

// CheckSchema returns an error wrapping store.ErrNotMigrated when the
// schema is missing or older than this binary's migrations.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("check schema: %w", translate(err))
	}
	want := migrate.Latest(ms)
	var cur int
	err = pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+migrate.Table).Scan(&cur)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		return fmt.Errorf("check schema: no %s table: %w", migrate.Table, store.ErrNotMigrated)
	}
	if err != nil {
		return fmt.Errorf("check schema: %w", translate(err))
	}
	if cur < want {
		return fmt.Errorf("check schema: version %d, this binary needs %d: %w", cur, want, store.ErrNotMigrated)
	}
	return nil
}
