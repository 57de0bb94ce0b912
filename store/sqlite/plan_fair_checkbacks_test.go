package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/sqlite"
)

// The fair check-back claim skips from bizID to bizID and reads each
// bizID's due rows through the per-bizID index: never the whole table,
// never a sort.
func TestFairCheckbackClaimUsesItsIndex(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ec.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	plan := func(q string, args ...any) string {
		t.Helper()
		rows, err := db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
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
	p := plan(sqlite.FairCheckbackBizSQL)
	require.Contains(t, p, "eventcenter_messages_verify_due_biz", p)
	require.NotContains(t, p, "SCAN eventcenter_messages\n", p+"\n")
	p = plan(sqlite.FairCheckbackCandidatesSQL, "b", 0, "[0,1]", 10)
	require.Contains(t, p, "INDEX eventcenter_messages_verify_due_biz (biz_id=? AND verify_next_at<?)", p)
	require.NotContains(t, p, "TEMP B-TREE", p)
}
