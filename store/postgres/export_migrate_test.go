package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventcenter/eventcenter/store/migrate"
)

// For the migration tests.
var (
	MigrateSteps = migrateSteps
	Migrations   = migrations
)

// CheckSchemaUpTo fails unless version v is recorded.
func CheckSchemaUpTo(ctx context.Context, pool *pgxpool.Pool, v int) error {
	var cur int
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+migrate.Table).Scan(&cur); err != nil {
		return err
	}
	if cur < v {
		return fmt.Errorf("schema version %d, want %d", cur, v)
	}
	return nil
}
