package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

// A backlog being drained leaves the index entries of the rows already
// claimed or sent until a vacuum. The fair claim must not walk them: its
// list of bizIDs once read the partial index of pending sends from the
// start, through every such entry, in every claim (claims grew from 150 ms
// to 1.2 s over a drain of 200,000). With 100,000 of 200,000 rows sent
// and no vacuum, a claim of 1,000 fetches at most a few thousand heap rows.
func TestFairClaimSkipsSentEntries(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(ctx, pool))
	_, err := pool.Exec(ctx, `ALTER TABLE eventcenter_messages SET (autovacuum_enabled = false)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
		payload, headers, target, topic, forward_key, tag, verify, send_status, send_next_at, created_at, updated_at)
		SELECT 'flood', 'k' || g, g % 8, 2, true, '\x00', '\x', '', 'orders', '', '', '', 0,
			now() - interval '1 minute' + g * interval '1 microsecond', now(), now()
		FROM generate_series(1, 200000) g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE eventcenter_messages`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE eventcenter_messages SET send_status = 1 WHERE id <= 100000`)
	require.NoError(t, err)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // EXPLAIN ANALYZE of an UPDATE, rolled back
	_, err = tx.Exec(ctx, "SET LOCAL jit = off")
	require.NoError(t, err)
	now := time.Now()
	var doc []struct {
		Plan fetchNode `json:"Plan"`
	}
	require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+postgres.FairClaimSendsSQL,
		now.Add(time.Minute), int64(7), []int32{0, 1, 2, 3, 4, 5, 6, 7}, now, 1000, []string{}, []int32{}, []int32{}).Scan(&doc))
	require.EqualValues(t, 1000, doc[0].Plan.Rows)
	var fetches float64
	var walk func(n fetchNode)
	walk = func(n fetchNode) {
		fetches += n.HeapFetches
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(doc[0].Plan)
	require.Less(t, fetches, 5000.0, "heap fetches of index-only scans: the claim walked the sent rows' entries")
}

type fetchNode struct {
	Rows        float64     `json:"Actual Rows"`
	HeapFetches float64     `json:"Heap Fetches"`
	Plans       []fetchNode `json:"Plans"`
}
