package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/migrate"
)

// Migrate checks the server version and applies the embedded migrations not
// yet applied, under a named lock (GET_LOCK: several instances may run it at
// once) in the DSN's database. MySQL commits DDL at once: a migration that
// fails half-way leaves what it created; fix the cause and drop those
// tables or indexes before running it again.
func Migrate(ctx context.Context, db *sql.DB) error {
	if err := CheckVersion(ctx, db); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(CONCAT('eventcenter_migrate:', DATABASE()), 60)`).Scan(&got); err != nil {
		return fmt.Errorf("migrate: lock: %w", translate(err))
	}
	if !got.Valid || got.Int64 != 1 {
		return errors.New("migrate: another migration held the lock for 60s")
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(rctx, `SELECT RELEASE_LOCK(CONCAT('eventcenter_migrate:', DATABASE()))`)
	}()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migrate.Table+` (
		version INT NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL,
		applied_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE = InnoDB`); err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	var cur int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+migrate.Table).Scan(&cur); err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	for _, m := range ms {
		if m.Version <= cur {
			continue
		}
		for _, stmt := range m.Statements() {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrate: migration %d %s: %w", m.Version, m.Name, translate(err))
			}
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO `+migrate.Table+` (version, name) VALUES (?, ?)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("migrate: migration %d %s: %w", m.Version, m.Name, translate(err))
		}
	}
	return nil
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
