package inbox

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

//go:embed migrations
var migrations embed.FS

// Migration is one schema step of a dialect.
type Migration struct {
	// Version is the file's number prefix (001_inbox.sql is 1).
	Version int
	// Name is the file name.
	Name string
	// SQL is the file's text: statements separated by ";" at a line end.
	SQL string
}

// Migrations returns the dialect's embedded migrations in order, for
// projects that apply schema changes with their own migration tool.
func Migrations(d Dialect) ([]Migration, error) {
	dir := path.Join("migrations", d.String())
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return nil, fmt.Errorf("inbox: migrations of dialect %v: %w", d, err)
	}
	var ms []Migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("inbox: migration file %s/%s is not NNN_name.sql", dir, e.Name())
		}
		b, err := migrations.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("inbox: read migration %s: %w", e.Name(), err)
		}
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	return ms, nil
}

// statements splits a migration into its statements, dropping comments.
func statements(sqlText string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.SplitSeq(sqlText, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// Migrate creates or updates the inbox tables in db: it applies the
// dialect's migrations in order, one statement at a time (MySQL drivers do
// not run several in one call by default), and records each version in
// ec_inbox_schema_version. Every migration is written to be safe to run
// again (IF NOT EXISTS), so Migrate can run at every consumer start. Two
// consumers migrating an empty PostgreSQL database at the same instant can
// make one of them fail with a duplicate-object error (CREATE ... IF NOT
// EXISTS is not atomic there): that one retries, or run Migrate once from
// a deploy step.
func Migrate(ctx context.Context, db Execer, d Dialect) error {
	ms, err := Migrations(d)
	if err != nil {
		return err
	}
	create := "CREATE TABLE IF NOT EXISTS ec_inbox_schema_version (version INT NOT NULL PRIMARY KEY)"
	if _, err := db.ExecContext(ctx, create); err != nil {
		return fmt.Errorf("inbox: migrate: create ec_inbox_schema_version: %w", err)
	}
	insert := "INSERT INTO ec_inbox_schema_version (version) VALUES ($1) ON CONFLICT DO NOTHING"
	if d == MySQL {
		insert = "INSERT IGNORE INTO ec_inbox_schema_version (version) VALUES (?)"
	}
	for _, m := range ms {
		for _, stmt := range statements(m.SQL) {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("inbox: migrate: %s: %w", m.Name, err)
			}
		}
		if _, err := db.ExecContext(ctx, insert, m.Version); err != nil {
			return fmt.Errorf("inbox: migrate: record version %d: %w", m.Version, err)
		}
	}
	return nil
}

// Schema returns the dialect's whole schema as one SQL text.
func Schema(d Dialect) (string, error) {
	ms, err := Migrations(d)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.SQL)
	}
	return b.String(), nil
}
