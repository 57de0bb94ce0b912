package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

// The fair claim's candidates come from the per-bizID index: a bizID with
// 100,000 due PREPAREs costs the claim its limit's worth of index entries,
// the bizIDs are found by skipping (one probe each), and nothing scans or
// sorts the whole table, analyzed or not.
func TestFairClaimPlanSkipsThroughTheBizIDs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(ctx, pool))
	_, err := pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
		verify, verify_next_at, created_at, updated_at)
		SELECT CASE WHEN g <= 100000 THEN 'big' ELSE 'small-' || (g % 5) END, 'k' || g, g % 8, 1, true,
			'', now() - interval '1 minute' + g * interval '1 microsecond', now(), now()
		FROM generate_series(1, 100500) g`)
	require.NoError(t, err)
	const limit = 256
	parts := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			_, err := pool.Exec(ctx, `ANALYZE eventcenter_messages`)
			require.NoError(t, err)
		}
		t.Run(fmt.Sprintf("analyzed=%v", analyzed), func(t *testing.T) {
			var doc []struct {
				Plan planNode `json:"Plan"`
			}
			require.NoError(t, pool.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+postgres.FairCheckbackCandidatesSQL,
				parts, time.Now(), limit).Scan(&doc))
			require.Len(t, doc, 1)
			// big: limit; each of the 5 small bizIDs: its 100.
			require.EqualValues(t, limit+500, doc[0].Plan.Rows, "candidates")
			usedIndex := false
			var walk func(n planNode)
			walk = func(n planNode) {
				require.NotEqual(t, "Seq Scan", n.Type, "a fair claim scans %s", n.Relation)
				if n.Index == "eventcenter_messages_verify_due_biz" {
					usedIndex = true
				}
				require.LessOrEqual(t, n.Rows*n.Loops, float64(2*(limit+500)), "%s reads too many rows", n.Type)
				for _, c := range n.Plans {
					walk(c)
				}
			}
			walk(doc[0].Plan)
			require.True(t, usedIndex, "the per-bizID index is read")
		})
	}
}
