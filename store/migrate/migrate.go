package migrate

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Table is the name of the table recording applied versions. A version is
// recorded by number and name only, never by content: a file may be
// rewritten (for example to build its index online) without touching the
// databases that applied it before.
const Table = "eventcenter_schema_migrations"

// NoTransactionMarker is the first line of a migration file whose
// statements the runner applies one by one, outside a transaction:
// PostgreSQL's CREATE INDEX CONCURRENTLY needs it. Such a file must be
// safe to run again after a failure half-way (IF NOT EXISTS; the
// PostgreSQL runner drops an index an interrupted concurrent build left
// invalid before it builds it again).
const NoTransactionMarker = "-- eventcenter:no-transaction"

// Migration is one schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
	// NoTransaction is set by NoTransactionMarker.
	NoTransaction bool
}

// Statements returns the step's statements (see Statements).
func (m Migration) Statements() []string { return Statements(m.SQL) }

// Load reads dir/*.sql from fsys, named NNNN_name.sql, sorted by version.
// Versions must be positive, unique and contiguous from 1.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	ms := make([]Migration, 0, len(files))
	for _, f := range files {
		base := strings.TrimSuffix(path.Base(f), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("load migrations: %s: want NNNN_name.sql", f)
		}
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("load migrations: %w", err)
		}
		sql := string(b)
		first, _, _ := strings.Cut(sql, "\n")
		noTx := strings.TrimSpace(first) == NoTransactionMarker
		if !noTx && strings.Contains(sql, NoTransactionMarker) {
			return nil, fmt.Errorf("load migrations: %s: %q must be the first line", f, NoTransactionMarker)
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: sql, NoTransaction: noTx})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("load migrations: version %d (%s) where %d was expected", m.Version, m.Name, i+1)
		}
	}
	return ms, nil
}

// Latest returns the highest version in ms (0 for none).
func Latest(ms []Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Statements splits a migration file into statements: they end with ";" at
// the end of a line; lines starting with "--" are comments and dropped.
// The trailing ";" is dropped too.
func Statements(script string) []string {
	var out []string
	var b strings.Builder
	for line := range strings.Lines(script) {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		b.WriteString(line)
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(b.String()), ";"))
			b.Reset()
		}
	}
	if s := strings.TrimSpace(b.String()); s != "" {
		out = append(out, s)
	}
	return out
}
