package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/sqlite"
)

// The orphan-commit gauges (every few seconds, every instance) and the
// console's list of orphans read the partial index of orphan rows, never
// the whole table.
func TestOrphanQueriesUseThePartialIndex(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ec.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	plan := func(q string) string {
		t.Helper()
		rows, err := db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q)
		require.NoError(t, err)
		defer rows.Close()
		var lines []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
			lines = append(lines, detail)
		}
		require.NoError(t, rows.Err())
		return strings.Join(lines, "\n")
	}
	p := plan(sqlite.OrphanCommitsSQL)
	require.Contains(t, p, "COVERING INDEX eventcenter_messages_orphan_commits", p)
	// List's query with the orphan filter alone (store.Filter{Orphan: true}).
	p = plan(`SELECT * FROM eventcenter_messages WHERE status = 2 AND has_body = 0 ORDER BY id DESC LIMIT 21`)
	require.Contains(t, p, "USING INDEX eventcenter_messages_orphan_commits", p)
}
