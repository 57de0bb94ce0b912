package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/internal/mytest"
	"github.com/eventcenter/eventcenter/store/mysql"
)

// TestFairCheckbackIndexOnline builds the fair check-back index (step
// 0004, issue 28) on a table of many PREPAREs while another connection
// inserts: ALGORITHM=INPLACE, LOCK=NONE keeps the inserts going, so none
// waits for most of the build (a blocking ALTER holds them all of it).
func TestFairCheckbackIndexOnline(t *testing.T) {
	t.Parallel()
	ms, err := mysql.Migrations()
	require.NoError(t, err)
	const step = 4
	require.Equal(t, "fair_checkback", ms[step-1].Name)
	db := mytest.DB(t)
	require.NoError(t, mysql.MigrateSteps(t.Context(), db, ms[:step-1], 5, 10, 0))
	_, err = db.ExecContext(t.Context(), `INSERT INTO eventcenter_messages
		(biz_id, message_key, `+"`partition`"+`, status, verify_next_at, created_at, updated_at)
		SELECT CONCAT('fill-', n % 7), CONCAT('k-', n), n % 16, 1, NOW(6), NOW(6), NOW(6)
		FROM (SELECT a.d + 10*b.d + 100*c.d + 1000*e.d + 10000*f.d AS n
			FROM `+digits+` a, `+digits+` b, `+digits+` c, `+digits+` e, `+digits+` f) g`)
	require.NoError(t, err)

	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var longest, n atomic.Int64
	var insertErr error
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			start := time.Now()
			_, err := db.ExecContext(ctx, `INSERT INTO eventcenter_messages
				(biz_id, message_key, `+"`partition`"+`, status, verify_next_at, created_at, updated_at)
				VALUES ('live', ?, 0, 1, NOW(6), NOW(6), NOW(6))`, fmt.Sprintf("during-%d", i))
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				insertErr = err
				return
			}
			if d := int64(time.Since(start)); d > longest.Load() {
				longest.Store(d)
			}
			n.Add(1)
			time.Sleep(2 * time.Millisecond)
		}
	})
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	require.NoError(t, mysql.MigrateSteps(t.Context(), db, ms[:step], 5, 10, 0))
	took := time.Since(start)
	time.Sleep(50 * time.Millisecond)
	stop()
	wg.Wait()
	require.NoError(t, insertErr)
	t.Logf("step took %s; %d inserts meanwhile, the longest %s", took, n.Load(), time.Duration(longest.Load()))
	require.Positive(t, n.Load())
	if l := time.Duration(longest.Load()); l >= 100*time.Millisecond {
		require.Less(t, l, took/2, "an insert waited for most of the step")
	}
	requireIndex(t, db, "eventcenter_messages_verify_due_biz")
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
