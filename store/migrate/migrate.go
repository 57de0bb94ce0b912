package migrate

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Table is the name of the table recording applied versions.
const Table = "eventcenter_schema_migrations"

// Migration is one schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

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
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
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
