package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/migrate"
)

// Migrate checks the server version and applies the embedded migrations not
// yet applied, under a named lock (GET_LOCK: several instances may run it at
// once) in the DSN's database. MySQL commits DDL at once: a migration that
// fails half-way leaves what it created; fix the cause and drop those
// tables or indexes before running it again.
//
// Centers may keep running meanwhile: every statement waits at most
// lock_wait_timeout = 1 s for its metadata lock (the inserts queued behind
// that request wait no longer) and is tried again, up to 10 times with
// backoff. Index and column steps are written ALGORITHM=INPLACE, LOCK=NONE
// (the server refuses the statement, rather than locking, when it cannot
// honour that); the README lists what each step locks.
func Migrate(ctx context.Context, db *sql.DB) error {
	if err := CheckVersion(ctx, db); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := migrateSteps(ctx, db, ms, migrateOptions{}); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// migrateOptions are the runner's knobs (tests shorten them).
type migrateOptions struct {
	lockWaitSeconds int           // 0 means 1
	tries           int           // 0 means 10
	backoff         time.Duration // 0 means 250ms
}

func migrateSteps(ctx context.Context, db *sql.DB, ms []migrate.Migration, opts migrateOptions) error {
	if opts.lockWaitSeconds <= 0 {
		opts.lockWaitSeconds = 1
	}
	if opts.tries <= 0 {
		opts.tries = 10
	}
	if opts.backoff <= 0 {
		opts.backoff = 250 * time.Millisecond
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return translate(err)
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(CONCAT('eventcenter_migrate:', DATABASE()), 60)`).Scan(&got); err != nil {
		return fmt.Errorf("lock: %w", translate(err))
	}
	if !got.Valid || got.Int64 != 1 {
		return errors.New("another migration held the lock for 60s")
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, uerr := conn.ExecContext(rctx, `SELECT RELEASE_LOCK(CONCAT('eventcenter_migrate:', DATABASE()))`)
		_, rerr := conn.ExecContext(rctx, `SET SESSION lock_wait_timeout = DEFAULT`)
		if uerr != nil || rerr != nil {
			// Never give a session with our lock or settings back to the pool.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migrate.Table+` (
		version INT NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL,
		applied_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE = InnoDB`); err != nil {
		return translate(err)
	}
	var cur int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+migrate.Table).Scan(&cur); err != nil {
		return translate(err)
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET SESSION lock_wait_timeout = %d", opts.lockWaitSeconds)); err != nil {
		return fmt.Errorf("set lock_wait_timeout: %w", translate(err))
	}
	for _, m := range ms {
		if m.Version <= cur {
			continue
		}
		for _, stmt := range m.Statements() {
			if err := execRetrying(ctx, conn, stmt, opts); err != nil {
				return fmt.Errorf("migration %d %s: %w", m.Version, m.Name, translate(err))
			}
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO `+migrate.Table+` (version, name) VALUES (?, ?)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("migration %d %s: %w", m.Version, m.Name, translate(err))
		}
	}
	return nil
}

// execRetrying runs one DDL statement, again after a lock wait timeout or
// a deadlock (the statement did not run), up to opts.tries times.
func execRetrying(ctx context.Context, conn *sql.Conn, stmt string, opts migrateOptions) error {
	return migrate.LockRetry{
		Tries: opts.tries, Backoff: opts.backoff, Retryable: lockRetryable,
		Waited: fmt.Sprintf("lock_wait_timeout %ds for a metadata lock", opts.lockWaitSeconds),
	}.Do(ctx, func() error {
		_, err := conn.ExecContext(ctx, stmt)
		return err
	})
}

// lockRetryable: a lock wait timeout or a deadlock (the statement did not run).
func lockRetryable(err error) bool {
	var myErr *gomysql.MySQLError
	return errors.As(err, &myErr) && (myErr.Number == errLockWaitTimeout || myErr.Number == errLockDeadlock)
}

// statements splits a migration file into statements (migrate.Statements).
func statements(script string) []string { return migrate.Statements(script) }

// CheckSchema checks the server version (an error wrapping ErrOldServer,
// naming the version found) and returns an error wrapping
// store.ErrNotMigrated when the schema is missing or older than this
// binary's migrations.
func CheckSchema(ctx context.Context, db *sql.DB) error {
	if err := CheckVersion(ctx, db); err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	want := migrate.Latest(ms)
	var cur int
	err = db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+migrate.Table).Scan(&cur)
	if err != nil {
		err = translate(err)
		if errors.Is(err, store.ErrNotMigrated) {
			return fmt.Errorf("check schema: no %s table: %w", migrate.Table, store.ErrNotMigrated)
		}
		return fmt.Errorf("check schema: %w", err)
	}
	if cur < want {
		return fmt.Errorf("check schema: version %d, this binary needs %d: %w", cur, want, store.ErrNotMigrated)
	}
	return nil
}
