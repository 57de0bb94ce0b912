package center

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/store/migrate"
	"github.com/eventcenter/eventcenter/store/mysql"
	"github.com/eventcenter/eventcenter/store/postgres"
)

// MigrateWithProgress is Migrate reporting the progress of long steps
// (PostgreSQL's concurrent index builds) to progress, with the store's
// name ("postgres", "store.shards[1]").
func MigrateWithProgress(ctx context.Context, cfg config.Store, log *slog.Logger, progress func(store string, p migrate.Progress)) error {
	switch cfg.Driver {
	case "postgres":
		return migratePostgres(ctx, cfg, log, "postgres", progress)
	case "sharded":
		for i := range cfg.Shards {
			name := fmt.Sprintf("store.shards[%d]", i)
			if err := migratePostgres(ctx, shardStore(cfg, i), log.With("shard", i), name, progress); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	}
	return Migrate(ctx, cfg, log)
}

func migratePostgres(ctx context.Context, cfg config.Store, log *slog.Logger, name string, progress func(string, migrate.Progress)) error {
	pool, err := NewPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	opts := postgres.MigrateOptions{Logger: log}
	if progress != nil {
		opts.Progress = func(p migrate.Progress) { progress(name, p) }
	}
	return postgres.MigrateWith(ctx, pool, opts)
}

// MigratePlan writes the pending migrations of the configured store(s) to
// w: each step, what it locks, and how long it is expected to take
// (migrate.WritePlan). It changes nothing.
func MigratePlan(ctx context.Context, cfg config.Store, w io.Writer) error {
	switch cfg.Driver {
	case "postgres":
		return planPostgres(ctx, cfg, "postgres", w)
	case "sharded":
		for i := range cfg.Shards {
			if err := planPostgres(ctx, shardStore(cfg, i), fmt.Sprintf("store.shards[%d]", i), w); err != nil {
				return err
			}
		}
		return nil
	case "mysql":
		db, err := NewMySQLDB(ctx, cfg)
		if err != nil {
			return err
		}
		defer db.Close()
		cur, latest, steps, err := mysql.Plan(ctx, db)
		if err != nil {
			return err
		}
		return migrate.WritePlan(w, "mysql", cur, latest, steps)
	case "sqlite":
		_, err := fmt.Fprintln(w, "sqlite: a single-node store, migrated when it is opened; no plan")
		return err
	}
	return fmt.Errorf("store.driver: unknown driver %q", cfg.Driver)
}

func planPostgres(ctx context.Context, cfg config.Store, name string, w io.Writer) error {
	pool, err := NewPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	cur, latest, steps, err := postgres.Plan(ctx, pool)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return migrate.WritePlan(w, name, cur, latest, steps)
}
