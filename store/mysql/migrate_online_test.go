package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/migrate"
	"github.com/eventcenter/eventcenter/store/mysql"
	"github.com/eventcenter/eventcenter/store/mysql/mytest"
	"github.com/eventcenter/eventcenter/testsupport/onlinetest"
)

// TestMigrationsOnline applies each migration after the first (which
// creates the tables) to a table of many PREPAREs while another connection
// inserts, as ingest does: ALGORITHM=INPLACE, LOCK=NONE keeps the inserts
// going, so none waits as long as the step's lock wait timeout and they are
// not seen waiting for a lock during most of the step (a blocking ALTER
// holds them all of it: TestOnlineCheckCatchesABlockingStep).
func TestMigrationsOnline(t *testing.T) {
	t.Parallel()
	ms, err := mysql.Migrations()
	require.NoError(t, err)
	for _, m := range ms[1:] {
		t.Run(fmt.Sprintf("%04d_%s", m.Version, m.Name), func(t *testing.T) {
			t.Parallel()
			db := mytest.DB(t)
			require.NoError(t, mysql.MigrateSteps(t.Context(), db, ms[:m.Version-1], 5, 10, 0))
			fillPrepares(t, db)
			in := startInserts(t, db)
			time.Sleep(50 * time.Millisecond)
			start := time.Now()
			require.NoError(t, mysql.MigrateSteps(t.Context(), db, ms[:m.Version], 5, 10, 0))
			took := time.Since(start)
			time.Sleep(50 * time.Millisecond)
			// Every online ALTER takes the table's metadata lock exclusively
			// for a moment at its start and end; on a loaded machine the
			// inserts waited 76 ms of a 118 ms ADD COLUMN and 213 ms of a
			// 562 ms step for it. A wait that short is no outage; a copying
			// ALTER of these 100,000 rows blocks them 1.7-6 s.
			in.RequireOnline(t, took, 5*time.Second, 500*time.Millisecond)
			if m.Name == "fair_checkback" {
				requireIndex(t, db, "eventcenter_messages_verify_due_biz")
			}
		})
	}
}

// The check above can fail: a copying ALTER with LOCK=SHARED holds the
// inserts behind its metadata lock for the whole copy.
func TestOnlineCheckCatchesABlockingStep(t *testing.T) {
	t.Parallel()
	ms, err := mysql.Migrations()
	require.NoError(t, err)
	db := mytest.DB(t)
	require.NoError(t, mysql.MigrateSteps(t.Context(), db, ms, 5, 10, 0))
	fillPrepares(t, db)
	blocking := migrate.Migration{Version: len(ms) + 1, Name: "copying_alter",
		SQL: "ALTER TABLE eventcenter_messages ADD INDEX test_blocking (message_key, biz_id), ALGORITHM=COPY, LOCK=SHARED;"}
	in := startInserts(t, db)
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	require.NoError(t, mysql.MigrateSteps(t.Context(), db, append(append([]migrate.Migration(nil), ms...), blocking), 30, 1, 0))
	took := time.Since(start)
	time.Sleep(50 * time.Millisecond)
	in.RequireBlocked(t, took)
}

// fillPrepares adds 100,000 PREPAREs of seven bizIDs in one statement.
func fillPrepares(t *testing.T, db *sql.DB) {
	t.Helper()
	_, err := db.ExecContext(t.Context(), `INSERT INTO eventcenter_messages
		(biz_id, message_key, `+"`partition`"+`, status, verify_next_at, created_at, updated_at)
		SELECT CONCAT('fill-', n % 7), CONCAT('k-', n), n % 16, 1, NOW(6), NOW(6), NOW(6)
		FROM (SELECT a.d + 10*b.d + 100*c.d + 1000*e.d + 10000*f.d AS n
			FROM `+digits+` a, `+digits+` b, `+digits+` c, `+digits+` e, `+digits+` f) g`)
	require.NoError(t, err)
}

// startInserts inserts one PREPARE at a time on one connection and
// probes that connection's process-list state for a lock wait ("Waiting
// for table metadata lock" and the like; testsupport/onlinetest).
func startInserts(t *testing.T, db *sql.DB) *onlinetest.Inserts {
	t.Helper()
	conn, err := db.Conn(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	var id int64
	require.NoError(t, conn.QueryRowContext(t.Context(), `SELECT CONNECTION_ID()`).Scan(&id))
	return onlinetest.Start(t, func(ctx context.Context, i int) error {
		_, err := conn.ExecContext(ctx, `INSERT INTO eventcenter_messages
			(biz_id, message_key, `+"`partition`"+`, status, verify_next_at, created_at, updated_at)
			VALUES ('live', ?, 0, 1, NOW(6), NOW(6), NOW(6))`, fmt.Sprintf("during-%d", i))
		return err
	}, func(ctx context.Context) (bool, error) {
		var state sql.NullString
		err := db.QueryRowContext(ctx, `SELECT STATE FROM information_schema.PROCESSLIST WHERE ID = ?`, id).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		return strings.Contains(strings.ToLower(state.String), "lock"), err
	})
}

// digits is a derived table of the digits 0-9 (MariaDB bounds recursive
// CTEs at 1,000 iterations).
const digits = `(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
	UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)`

func requireIndex(t *testing.T, db *sql.DB, name string) {
	t.Helper()
	var cols string
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT GROUP_CONCAT(column_name ORDER BY seq_in_index)
		FROM information_schema.statistics WHERE table_schema = DATABASE()
		AND table_name = 'eventcenter_messages' AND index_name = ?`, name).Scan(&cols))
	require.Equal(t, "prepared_biz,verify_due_at,partition", cols)
}
