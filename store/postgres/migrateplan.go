package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventcenter/eventcenter/store/migrate"
)

// The expected duration of an index build, a deliberately simple estimate
// from the table's size (pg_total_relation_size) and rows
// (pg_class.reltuples): each heap scan reads the table at scanBytesPerSec,
// and the sort handles sortRowsPerSec. CREATE INDEX CONCURRENTLY scans the
// table twice (build, then validation). Measured on the project's 2-core
// machine with the table in cache (TestPlan: 300,000 rows, 76 MiB, a
// partial index built in 80-150 ms, estimated 250 ms: it errs long); a
// table read from disk is slower, and a concurrent build also waits for
// the transactions running when it starts.
const (
	scanBytesPerSec = 1 << 30
	sortRowsPerSec  = 3_000_000
)

func indexBuildEstimate(rows, bytes int64, concurrent bool) time.Duration {
	scans := 1.0
	if concurrent {
		scans = 2
	}
	sec := scans*float64(bytes)/scanBytesPerSec + float64(rows)/sortRowsPerSec
	return time.Duration(sec * float64(time.Second))
}

var (
	ddlCreateIndexRE = regexp.MustCompile(`(?is)^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+(CONCURRENTLY\s+)?(?:IF\s+NOT\s+EXISTS\s+)?(?:"?[A-Za-z_][A-Za-z0-9_$]*"?\s+)?ON\s+(?:ONLY\s+)?"?([A-Za-z_][A-Za-z0-9_$]*)"?`)
	ddlCreateTableRE = regexp.MustCompile(`(?is)^\s*CREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"?([A-Za-z_][A-Za-z0-9_$]*)"?`)
	ddlAlterTableRE  = regexp.MustCompile(`(?is)^\s*ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?"?([A-Za-z_][A-Za-z0-9_$]*)"?\s+(.*)$`)
	ddlAddColumnRE   = regexp.MustCompile(`(?is)^ADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?[A-Za-z_"][^,]*$`)
	ddlVolatileRE    = regexp.MustCompile(`(?i)\bDEFAULT\b.*\b(now|random|clock_timestamp|gen_random_uuid|nextval|timeofday)\s*\(|\bGENERATED\b.*\bSTORED\b`)
	ddlDropIndexRE   = regexp.MustCompile(`(?is)^\s*DROP\s+INDEX\s+(CONCURRENTLY\s+)?`)
	// Storage parameters that PostgreSQL sets under SHARE UPDATE
	// EXCLUSIVE (fill factor, autovacuum settings), one or several.
	ddlSetStorageRE = regexp.MustCompile(`(?is)^SET\s*\(\s*(?:(?:fillfactor|autovacuum_[a-z_]+)\s*=\s*[0-9.]+\s*,?\s*)+\)\s*;?$`)
)

// classifyDDL says what a statement locks. created are the tables the step
// creates before it (nobody else sees them until the step commits).
func classifyDDL(stmt string, created map[string]bool) migrate.PlanStatement {
	ps := migrate.PlanStatement{SQL: stmtFirstLine(stmt)}
	if m := ddlCreateTableRE.FindStringSubmatch(stmt); m != nil {
		created[m[1]] = true
		ps.Lock = "none (a new table)"
		return ps
	}
	if m := ddlCreateIndexRE.FindStringSubmatch(stmt); m != nil {
		table := m[2]
		if created[table] {
			ps.Lock = "none (on a table this step creates)"
			return ps
		}
		ps.Table = table
		if m[1] != "" {
			ps.Lock = "SHARE UPDATE EXCLUSIVE on " + table + ": reads and writes go on; waits for the transactions running when it starts"
			return ps
		}
		ps.Lock = "SHARE on " + table + ": writes wait for the whole build"
		ps.Blocks = true
		return ps
	}
	if m := ddlAlterTableRE.FindStringSubmatch(stmt); m != nil {
		table, action := m[1], strings.TrimSpace(m[2])
		if created[table] {
			ps.Lock = "none (on a table this step creates)"
			return ps
		}
		if ddlSetStorageRE.MatchString(action) {
			ps.Lock = "SHARE UPDATE EXCLUSIVE on " + table + ": reads and writes go on; rewrites nothing"
			return ps
		}
		if ddlAddColumnRE.MatchString(action) && !ddlVolatileRE.MatchString(action) {
			ps.Lock = "ACCESS EXCLUSIVE on " + table + " for an instant (catalog only, no rewrite); waits at most lock_timeout per try"
			return ps
		}
		ps.Table = table
		ps.Lock = "ACCESS EXCLUSIVE on " + table + ": may rewrite or scan the table; reads and writes wait"
		ps.Blocks = true
		return ps
	}
	if m := ddlDropIndexRE.FindStringSubmatch(stmt); m != nil {
		if m[1] != "" {
			ps.Lock = "SHARE UPDATE EXCLUSIVE: reads and writes go on"
			return ps
		}
		ps.Lock = "ACCESS EXCLUSIVE on the index's table for an instant; waits at most lock_timeout per try"
		return ps
	}
	ps.Lock = "unknown statement: assume ACCESS EXCLUSIVE for its duration"
	ps.Blocks = true
	return ps
}

// Plan returns the migrations not yet applied, with what each statement
// locks and, for statements that scan a table, the table's size and the
// expected duration (indexBuildEstimate). It changes nothing.
func Plan(ctx context.Context, pool *pgxpool.Pool) (current, latest int, steps []migrate.PlanStep, err error) {
	ms, err := migrations()
	if err != nil {
		return 0, 0, nil, fmt.Errorf("plan: %w", translate(err))
	}
	current, steps, err = planSteps(ctx, pool, ms)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("plan: %w", translate(err))
	}
	return current, migrate.Latest(ms), steps, nil
}

func planSteps(ctx context.Context, pool *pgxpool.Pool, ms []migrate.Migration) (int, []migrate.PlanStep, error) {
	var cur int
	err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+migrate.Table).Scan(&cur)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // no table yet: nothing applied
		err, cur = nil, 0
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read the schema version: %w", err)
	}
	var steps []migrate.PlanStep
	for _, m := range ms {
		if m.Version <= cur {
			continue
		}
		step := migrate.PlanStep{Version: m.Version, Name: m.Name, NoTransaction: m.NoTransaction}
		created := map[string]bool{}
		for _, stmt := range m.Statements() {
			ps := classifyDDL(stmt, created)
			if ps.Table != "" {
				if err := tableSize(ctx, pool, &ps); err != nil {
					return 0, nil, err
				}
				if ddlCreateIndexRE.MatchString(stmt) || ps.Blocks {
					ps.Estimate = indexBuildEstimate(ps.Rows, ps.Bytes, !ps.Blocks)
				}
			}
			step.Statements = append(step.Statements, ps)
		}
		steps = append(steps, step)
	}
	return cur, steps, nil
}

// tableSize reads the planner's row estimate and the total size of the
// table in the current schema (0 when it does not exist yet).
func tableSize(ctx context.Context, pool *pgxpool.Pool, ps *migrate.PlanStatement) error {
	var rows float64
	err := pool.QueryRow(ctx, `SELECT greatest(c.reltuples, 0), pg_total_relation_size(c.oid) FROM pg_class c
		WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')`, ps.Table).
		Scan(&rows, &ps.Bytes)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("size of %s: %w", ps.Table, err)
	}
	ps.Rows = int64(rows)
	return nil
}
