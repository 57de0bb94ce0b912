package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Instance is a running center's heartbeat row (eventcenter_instances).
type Instance struct {
	ID        string
	Level     int
	Version   string
	StartedAt time.Time
	SeenAt    time.Time
}

// ReportInstance writes the instance's heartbeat: its level and version,
// seen now by the database's clock.
func ReportInstance(ctx context.Context, pool *pgxpool.Pool, in Instance) error {
	_, err := pool.Exec(ctx, `INSERT INTO eventcenter_instances (instance_id, level, version, started_at, seen_at)
		VALUES ($1, $2, $3, $4, now())
		ON CONFLICT (instance_id) DO UPDATE SET level = EXCLUDED.level, version = EXCLUDED.version, seen_at = now()`,
		in.ID, in.Level, in.Version, in.StartedAt)
	if err != nil {
		return fmt.Errorf("report instance %s: %w", in.ID, translate(err))
	}
	return nil
}

// LiveInstances returns the instances seen within ttl, and deletes the rows
// not seen for 10 ttl (instances that died without saying so).
func LiveInstances(ctx context.Context, pool *pgxpool.Pool, ttl time.Duration) ([]Instance, error) {
	if _, err := pool.Exec(ctx, `DELETE FROM eventcenter_instances WHERE seen_at < now() - make_interval(secs => $1)`,
		(10 * ttl).Seconds()); err != nil {
		return nil, fmt.Errorf("forget dead instances: %w", translate(err))
	}
	rows, err := pool.Query(ctx, `SELECT instance_id, level, version, started_at, seen_at FROM eventcenter_instances
		WHERE seen_at >= now() - make_interval(secs => $1) ORDER BY instance_id`, ttl.Seconds())
	if err != nil {
		return nil, fmt.Errorf("live instances: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Instance, error) {
		var in Instance
		err := r.Scan(&in.ID, &in.Level, &in.Version, &in.StartedAt, &in.SeenAt)
		return in, err
	})
	if err != nil {
		return nil, fmt.Errorf("live instances: %w", translate(err))
	}
	return out, nil
}

// ForgetInstance deletes the instance's row (a clean stop).
func ForgetInstance(ctx context.Context, pool *pgxpool.Pool, id string) error {
	if _, err := pool.Exec(ctx, `DELETE FROM eventcenter_instances WHERE instance_id = $1`, id); err != nil {
		return fmt.Errorf("forget instance %s: %w", id, translate(err))
	}
	return nil
}
