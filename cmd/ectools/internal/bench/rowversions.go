package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// RowVersions is how many row versions the center wrote in PostgreSQL,
// from pg_stat_user_tables of the run's fresh schema, read after the
// center stopped (a backend reports its counters when it exits, so none
// are pending then). Every insert and every update makes a row version;
// an update is HOT when no indexed column changed (no index entries
// written).
type RowVersions struct {
	// Inserts, Updates and HotUpdates sum n_tup_ins, n_tup_upd and
	// n_tup_hot_upd over the schema's tables.
	Inserts    int64 `json:"inserts"`
	Updates    int64 `json:"updates"`
	HotUpdates int64 `json:"hot_updates"`
	// ByTable is inserts/updates/hot updates of each table that had any.
	ByTable map[string][3]int64 `json:"by_table,omitempty"`
	// Messages is the messages the producers sent (PREPAREs) in the run.
	Messages int64 `json:"messages"`
	// PerMessage is (Inserts + Updates) / Messages; InsertsPerMessage and
	// UpdatesPerMessage its two parts.
	PerMessage        float64 `json:"per_message"`
	InsertsPerMessage float64 `json:"inserts_per_message"`
	UpdatesPerMessage float64 `json:"updates_per_message"`
}

// readRowVersions sums the schema's table counters. It first waits (at
// most 10 s) for the backends of application name app to be gone, so that
// their counters were flushed.
func readRowVersions(ctx context.Context, dsn, schema, app string) (*RowVersions, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("row versions: connect: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			return nil, fmt.Errorf("row versions: backends: %w", err)
		}
		if n == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		return nil, fmt.Errorf("row versions: clear snapshot: %w", err)
	}
	rows, err := conn.Query(ctx, `SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd
		FROM pg_stat_user_tables WHERE schemaname = $1`, schema)
	if err != nil {
		return nil, fmt.Errorf("row versions: pg_stat_user_tables: %w", err)
	}
	defer rows.Close()
	rv := &RowVersions{ByTable: map[string][3]int64{}}
	for rows.Next() {
		var name string
		var ins, upd, hot int64
		if err := rows.Scan(&name, &ins, &upd, &hot); err != nil {
			return nil, fmt.Errorf("row versions: %w", err)
		}
		rv.Inserts += ins
		rv.Updates += upd
		rv.HotUpdates += hot
		if ins+upd > 0 {
			rv.ByTable[name] = [3]int64{ins, upd, hot}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("row versions: %w", err)
	}
	return rv, nil
}

// perMessage fills the per-message figures for messages sent.
func (rv *RowVersions) perMessage(messages int64) {
	rv.Messages = messages
	if messages > 0 {
		rv.InsertsPerMessage = float64(rv.Inserts) / float64(messages)
		rv.UpdatesPerMessage = float64(rv.Updates) / float64(messages)
		rv.PerMessage = rv.InsertsPerMessage + rv.UpdatesPerMessage
	}
}
