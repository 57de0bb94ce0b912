package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/migrate"
)

// Migrate applies the embedded migrations not yet applied, in one
// transaction under an advisory lock (several instances may run it at once),
// in the schema the pool's search_path selects.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('eventcenter_migrate:' || current_schema()))`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migrate.Table+` (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var cur int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+migrate.Table).Scan(&cur); err != nil {
			return err
		}
		for _, m := range ms {
			if m.Version <= cur {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d %s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+migrate.Table+` (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return fmt.Errorf("migration %d %s: %w", m.Version, m.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	return nil
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
