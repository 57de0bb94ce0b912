package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/migrate"
)

var (
	ddlCreateTableRE = regexp.MustCompile("(?is)^\\s*CREATE\\s+TABLE\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?`?([A-Za-z_][A-Za-z0-9_$]*)`?")
	ddlAlterTableRE  = regexp.MustCompile("(?is)^\\s*ALTER\\s+TABLE\\s+`?([A-Za-z_][A-Za-z0-9_$]*)`?")
	ddlCreateIndexRE = regexp.MustCompile("(?is)^\\s*CREATE\\s+(?:UNIQUE\\s+)?INDEX\\s+\\S+\\s+ON\\s+`?([A-Za-z_][A-Za-z0-9_$]*)`?")
	ddlLockNoneRE    = regexp.MustCompile(`(?i)\bLOCK\s*=\s*NONE\b`)
)

// classifyDDL says what a MySQL / MariaDB statement locks.
func classifyDDL(stmt string) migrate.PlanStatement {
	ps := migrate.PlanStatement{SQL: strings.SplitN(strings.TrimSpace(stmt), "\n", 2)[0]}
	if ddlCreateTableRE.MatchString(stmt) {
		ps.Lock = "none (a new table)"
		return ps
	}
	table := ""
	if m := ddlAlterTableRE.FindStringSubmatch(stmt); m != nil {
		table = m[1]
	} else if m := ddlCreateIndexRE.FindStringSubmatch(stmt); m != nil {
		table = m[1]
	}
	if table == "" {
		ps.Lock = "unknown statement: assume it blocks writes for its duration"
		ps.Blocks = true
		return ps
	}
	ps.Table = table
	if ddlLockNoneRE.MatchString(stmt) {
		ps.Lock = "online DDL (LOCK=NONE) on " + table + ": reads and writes go on; an exclusive metadata lock for an instant at start and end, waiting at most lock_wait_timeout per try"
		return ps
	}
	ps.Lock = "no LOCK=NONE on " + table + ": the server may copy the table; writes wait"
	ps.Blocks = true
	return ps
}

// Plan returns the migrations not yet applied and what each statement
// locks, with the size of the table it works on (information_schema). It
// changes nothing. MySQL gives no duration estimate.
func Plan(ctx context.Context, db *sql.DB) (current, latest int, steps []migrate.PlanStep, err error) {
	ms, err := migrations()
	if err != nil {
		return 0, 0, nil, fmt.Errorf("plan: %w", err)
	}
	err = db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+migrate.Table).Scan(&current)
	if err != nil {
		if !errors.Is(translate(err), store.ErrNotMigrated) {
			return 0, 0, nil, fmt.Errorf("plan: %w", translate(err))
		}
		current = 0
	}
	for _, m := range ms {
		if m.Version <= current {
			continue
		}
		step := migrate.PlanStep{Version: m.Version, Name: m.Name, NoTransaction: true}
		for _, stmt := range m.Statements() {
			ps := classifyDDL(stmt)
			if ps.Table != "" {
				err := db.QueryRowContext(ctx, `SELECT COALESCE(table_rows, 0), COALESCE(data_length + index_length, 0)
					FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`, ps.Table).Scan(&ps.Rows, &ps.Bytes)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return 0, 0, nil, fmt.Errorf("plan: size of %s: %w", ps.Table, translate(err))
				}
			}
			step.Statements = append(step.Statements, ps)
		}
		steps = append(steps, step)
	}
	return current, migrate.Latest(ms), steps, nil
}
