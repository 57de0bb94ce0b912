package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// planCacheMode is the plan_cache_mode the store wants on its connections.
//
// pgx prepares and caches every statement per connection. After five runs
// PostgreSQL may switch a prepared statement to a generic plan chosen with
// the table statistics of that moment, and keeps it until the statistics
// change. A center starting on a new (or newly emptied) table plans its
// lookups when the table is empty: a hash join over a sequential scan. That
// plan stays while the table grows to millions of rows, until autovacuum
// analyzes it (after 10% of the rows changed, at its next round): measured
// on 150,000 rows, the batch's row lookup took 39 ms instead of 0.1 ms, and
// ingest, claims and sent marks all slowed with the table. Custom plans are
// made for the parameters of each run, at a planning cost of about 0.1 ms.
const planCacheMode = "force_custom_plan"

// ConfigurePool sets what the store needs on a pool's connections before
// it is opened: plan_cache_mode = force_custom_plan, unless the DSN sets
// plan_cache_mode itself.
func ConfigurePool(cfg *pgxpool.Config) {
	params := cfg.ConnConfig.RuntimeParams
	if _, set := params["plan_cache_mode"]; set {
		return
	}
	params["plan_cache_mode"] = planCacheMode
}
