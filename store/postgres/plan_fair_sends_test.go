package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

// The fair claim on a backlog of 200,000 due rows of one bizID and 100 of
// another (docs/fairness.md): it lists the bizIDs by probing the index
// eventcenter_messages_send_due_biz, reads at most the limit per bizID from
// it, in order, and sorts no more than it read: no sequential scan, no
// sort of the backlog. Analyzed and not.
func TestFairClaimPlan(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(ctx, pool))
	_, err := pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
		payload, headers, target, topic, forward_key, tag, verify, send_status, send_next_at, created_at, updated_at)
		SELECT CASE WHEN g <= 200000 THEN 'flood' ELSE 'quiet' END, 'k' || g, g % 8, 2, true,
			convert_to(repeat('x', 256), 'UTF8'), '\x', '', 'orders', '', '', '', 0,
			now() - interval '1 minute' + g * interval '1 microsecond', now(), now()
		FROM generate_series(1, 200100) g`)
	require.NoError(t, err)
	// Sent rows of a third bizID: not in the partial index.
	_, err = pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
		payload, headers, target, topic, forward_key, tag, verify, send_status, send_next_at, created_at, updated_at)
		SELECT 'done', 'k' || g, g % 8, 2, true, '\x00', '\x', '', 'orders', '', '', '', 1, now(), now(), now()
		FROM generate_series(1, 50000) g`)
	require.NoError(t, err)

	const limit = 1000
	parts := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			_, err := pool.Exec(ctx, `ANALYZE eventcenter_messages`)
			require.NoError(t, err)
		}
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, "SET LOCAL jit = off") // as the store does
		require.NoError(t, err)
		now := time.Now()
		var doc []struct {
			Plan          planNode `json:"Plan"`
			ExecutionTime float64  `json:"Execution Time"`
			JIT           any      `json:"JIT"`
		}
		require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+postgres.FairClaimSendsSQL,
			now.Add(time.Minute), int64(7), parts, now, limit, []string{}, []int32{}, []int32{}).Scan(&doc))
		require.NoError(t, tx.Rollback(ctx))
		require.Len(t, doc, 1)
		require.EqualValues(t, limit, doc[0].Plan.Rows, "rows claimed")
		usedIndex := false
		var walk func(n planNode)
		walk = func(n planNode) {
			if n.Type == "Seq Scan" {
				require.NotEqual(t, "eventcenter_messages", n.Relation, "a claim scans the whole table")
			}
			if n.Index == "eventcenter_messages_send_due_biz" {
				usedIndex = true
			}
			require.LessOrEqual(t, n.Rows*n.Loops, float64(4*limit), "%s %s reads too many rows", n.Type, n.Index)
			for _, c := range n.Plans {
				walk(c)
			}
		}
		walk(doc[0].Plan)
		require.True(t, usedIndex, "the claim reads eventcenter_messages_send_due_biz")
		t.Logf("analyzed=%v: fair claim of %d over a 200,000-row backlog: %.1f ms", analyzed, limit, doc[0].ExecutionTime)
		require.Nil(t, doc[0].JIT, "no JIT (it compiled this plan in 900 ms)")
	}
}
