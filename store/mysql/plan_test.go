package mysql_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/mysql"
	"github.com/eventcenter/eventcenter/store/mysql/mytest"
)

// planDB returns a migrated database with rows messages: every 1,000th an
// orphan COMMIT, every 500th PREPARED, the rest committed and sent, over 8
// partitions and 3 bizIDs; then ANALYZE.
func planDB(t *testing.T, rows int) *sql.DB {
	t.Helper()
	db := mytest.DB(t)
	require.NoError(t, mysql.Migrate(t.Context(), db))
	now := time.Now().UTC()
	for lo := 0; lo < rows; lo += 1000 {
		var vals []string
		var args []any
		for i := lo; i < min(lo+1000, rows); i++ {
			status, hasBody, sendStatus := 2, true, 1
			switch {
			case i%1000 == 0:
				hasBody, sendStatus = false, 0
			case i%500 == 0:
				status, sendStatus = 1, 0
			}
			vals = append(vals, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, fmt.Sprint("b", i%3), fmt.Sprint("k", i), i%8, status, hasBody, sendStatus,
				now, now, now, now, now)
		}
		_, err := db.Exec("INSERT INTO eventcenter_messages (biz_id, message_key, `partition`, status, has_body, "+
			"send_status, verify_next_at, send_next_at, sent_at, created_at, updated_at) VALUES "+strings.Join(vals, ", "), args...)
		require.NoError(t, err)
	}
	_, err := db.Exec("ANALYZE TABLE eventcenter_messages")
	require.NoError(t, err)
	return db
}

// explain returns the EXPLAIN rows of q as "table:type:key:Extra" lines
// (the columns MySQL 8 and MariaDB share).
func explain(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN "+q, args...)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		get := map[string]string{}
		for i, c := range cols {
			get[c] = vals[i].String
		}
		out = append(out, strings.Join([]string{get["table"], get["type"], get["key"], get["Extra"]}, ":"))
	}
	require.NoError(t, rows.Err())
	return strings.Join(out, "\n")
}

// The gauges (read every few seconds by every instance) read the indexes
// of the generated columns that stand in for PostgreSQL's partial indexes,
// never the table: orphan COMMITs, the oldest PREPARED, and the console's
// list of orphans.
func TestGaugesUseTheirIndexes(t *testing.T) {
	t.Parallel()
	db := planDB(t, 20000)
	plan := explain(t, db, mysql.OrphanCommitsSQL)
	require.Contains(t, plan, ":eventcenter_messages_orphan_commits:", plan)
	require.NotContains(t, plan, ":ALL:", plan)
	plan = explain(t, db, mysql.OldestPreparedSQL)
	require.Contains(t, plan, ":eventcenter_messages_prepared:", plan)
	require.NotContains(t, plan, ":ALL:", plan)
	// List's query with the orphan filter alone (store.Filter{Orphan: true}).
	plan = explain(t, db, "SELECT id FROM eventcenter_messages WHERE orphan_biz IS NOT NULL ORDER BY id DESC LIMIT 21")
	require.NotContains(t, plan, ":ALL:", plan)
}

// A claim walks one partition's due index in order: no sort, so it locks
// only the rows it returns. Purge reads the purge index.
func TestClaimAndPurgeUseTheirIndexes(t *testing.T) {
	t.Parallel()
	db := planDB(t, 20000)
	for _, q := range []string{mysql.ClaimSendsSQL, mysql.ClaimCheckbacksSQL} {
		plan := explain(t, db, fmt.Sprintf(q, "*"), 3, time.Now().UTC(), 100)
		require.Regexp(t, `:(range|ref):eventcenter_messages_(send|verify)_due:`, plan)
		require.NotContains(t, plan, "filesort", plan)
	}
	// Steady state: few rows are past the retention period.
	plan := explain(t, db, mysql.PurgeSQL, time.Now().UTC().Add(-time.Hour), 500)
	require.Contains(t, plan, ":range:eventcenter_messages_purge:", plan)
}
