package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/sqlite"
)

// A SQLite store is migrated when its one process opens it, before
// anything else writes, so no migration runs beside writers. Step 0005
// (the fair check-back index) upgrades a database of the previous schema
// holding PREPAREs at Open (100,000 took 0.13-0.28 s here; the time is
// logged, not asserted: under -race the pure-Go SQLite is ~50× slower).
func TestFairCheckbackIndexUpgradesAnExistingDatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ec.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	// Back to schema 0004, with rows (0006, the fair send claim's index,
	// goes too: the runner applies the steps after the last applied).
	_, err = db.Exec(`DROP INDEX eventcenter_messages_verify_due_biz`)
	require.NoError(t, err)
	_, err = db.Exec(`DROP INDEX eventcenter_messages_send_due_biz`)
	require.NoError(t, err)
	_, err = db.Exec(`DELETE FROM eventcenter_schema_migrations WHERE version >= 5`)
	require.NoError(t, err)
	_, err = db.Exec(`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 20000)
		INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, verify_next_at, created_at, updated_at)
		SELECT 'b' || (n % 7), 'k' || n, n % 16, 1, n, n, n FROM g`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	start := time.Now()
	s, err = sqlite.Open(t.Context(), path, sqlite.Options{Logger: quiet})
	require.NoError(t, err)
	took := time.Since(start)
	require.NoError(t, s.Close())
	t.Logf("upgrade with 20,000 PREPAREs took %s", took)
	db, err = sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'eventcenter_messages_verify_due_biz'`).Scan(&n))
	require.Equal(t, 1, n)
}
