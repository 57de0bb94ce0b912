package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/store/storetest"
)

// A store started on an empty table must not keep the plans made for it
// once the table has grown: the row lookup of every Apply would scan the
// whole table.
func TestLookupPlanFollowsTheTableAsItGrows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cfg, err := pgxpool.ParseConfig(pgtest.DSN(t))
	require.NoError(t, err)
	cfg.MaxConns = 1 // one connection: one statement cache
	postgres.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, postgres.Migrate(ctx, pool))
	s, err := postgres.New(pool, postgres.Options{Logger: quiet})
	require.NoError(t, err)

	// Many small batches on a nearly empty table (PostgreSQL considers a
	// generic plan from the sixth run on).
	for round := range 8 {
		p, cm := storetest.LifecycleBatch(round, 2, time.Now())
		require.NoError(t, storetest.Lifecycle(ctx, s, p, cm))
	}
	// The table grows; nothing analyzes it yet.
	_, err = pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
		payload, headers, target, topic, forward_key, tag, verify, created_at, updated_at)
		SELECT 'grow', 'k' || g, g % 8, 2, true, '\x00', '\x', '', 'orders', '', '', '', now(), now()
		FROM generate_series(1, 20000) g`)
	require.NoError(t, err)
	p, cm := storetest.LifecycleBatch(99, 2, time.Now())
	require.NoError(t, storetest.Lifecycle(ctx, s, p, cm))

	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	var name string
	var generic, custom int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT name, generic_plans, custom_plans FROM pg_prepared_statements
		WHERE statement LIKE '%JOIN unnest%FOR UPDATE OF m%' AND statement NOT LIKE '%pg_prepared_statements%'`).Scan(&name, &generic, &custom))
	require.Zero(t, generic, "no generic plan")
	require.EqualValues(t, 2*9, custom, "a custom plan for every run")
	plan := explain(t, conn, fmt.Sprintf(`EXECUTE %q('{grow}'::text[], '{k1}'::text[])`, name))
	require.Contains(t, plan, "Index Scan using eventcenter_messages_key on eventcenter_messages", plan)
}

// An Apply looks its batch's keys up in the unique index even where the
// planner would rather hash the table: on 10,000 analyzed rows (below
// about 30,000 here, for a batch of 500 keys) it costs a hash join over a
// sequential scan below a probe per key, and on a growing table whose
// statistics lag (a new deployment, a burst) that join hashed every row
// with its payload, past work_mem, in every batch. The plans are read
// with auto_explain, which reports each statement the store sends.
func TestApplyLooksKeysUpInTheUniqueIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cfg, err := pgxpool.ParseConfig(pgtest.DSN(t))
	require.NoError(t, err)
	postgres.ConfigurePool(cfg)
	var mu sync.Mutex
	var plans []string
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		plans = append(plans, n.Message)
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `LOAD 'auto_explain'`)
		if err == nil {
			_, err = c.Exec(ctx, `SET auto_explain.log_min_duration = 0; SET auto_explain.log_level = notice`)
		}
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, postgres.Migrate(ctx, pool))
	_, err = pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
		payload, headers, target, topic, forward_key, tag, verify, created_at, updated_at)
		SELECT 'bench', 'old' || g, g % 8, 2, true, convert_to(repeat('x', 256), 'UTF8'), '\x', '', 'orders', '', '', '', now(), now()
		FROM generate_series(1, 10000) g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE eventcenter_messages`)
	require.NoError(t, err)
	s, err := postgres.New(pool, postgres.Options{Logger: quiet})
	require.NoError(t, err)

	mu.Lock()
	plans = nil
	mu.Unlock()
	p, cm := storetest.LifecycleBatch(1, 500, time.Now())
	require.NoError(t, storetest.Lifecycle(ctx, s, p, cm))

	mu.Lock()
	defer mu.Unlock()
	lookups := 0
	for _, plan := range plans {
		if !strings.Contains(plan, "JOIN unnest") || !strings.Contains(plan, "FOR UPDATE OF m") {
			continue
		}
		lookups++
		require.NotContains(t, plan, "Seq Scan on eventcenter_messages", plan)
		require.Contains(t, plan, "Index Scan using eventcenter_messages_key on eventcenter_messages", plan)
	}
	require.Equal(t, 2, lookups, "one lookup for the prepares, one for the commits")
}

// Marking sent looks rows up by id, never through the partial index of
// pending sends: after a burst, that index holds an entry for every row
// sent since the last vacuum.
func TestMarkSentPlanUsesThePrimaryKey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(ctx, pool))
	// Statistics that make the pending-send index look cheapest: many
	// sent rows, a handful pending. (The batch is small for a table this
	// small, or a sequential scan would rightly win over the ids.)
	_, err := pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
		payload, headers, target, topic, forward_key, tag, verify, send_status, created_at, updated_at)
		SELECT 'b', 'k' || g, g % 8, 2, true, '\x00', '\x', '', 'orders', '', '', '', CASE WHEN g % 5000 = 0 THEN 0 ELSE 1 END, now(), now()
		FROM generate_series(1, 50000) g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE eventcenter_messages`)
	require.NoError(t, err)

	ids := make([]int64, 50)
	sent := make([]store.Sent, 50)
	for i := range ids {
		ids[i] = int64(i*97 + 1)
		sent[i] = store.Sent{ID: ids[i], Ref: "t/0@1"}
	}
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // EXPLAIN only
	plan := explain(t, tx, postgres.MarkSentSQL, time.Now(), ids, postgres.SentRefs(sent))
	require.NotContains(t, plan, "eventcenter_messages_send_due", plan)
	require.Contains(t, plan, "eventcenter_messages_pkey", plan)
}

// Marking sent on a table that was never analyzed (autovacuum off, or a
// new table in its first minute) must not run one side of a join once per
// row of the other. A statement that joins unnest(ids, refs)
// on id does: the planner estimated one pending row, scanned the table in the
// outer loop and the 500 ids once per pending row (Function Scan loops=5001,
// 2.5 million comparisons, 0.4 s at 8,000 rows), which held a burst's
// forwarding to 500 msg/s.
func TestMarkSentPlanOnATableNeverAnalyzed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(ctx, pool))
	// 256-byte payloads, as the bench sends: with tiny rows the planner
	// happens to choose a hash join.
	_, err := pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
		payload, headers, target, topic, forward_key, tag, verify, send_status, send_next_at, created_at, updated_at)
		SELECT 'b', 'k' || g, g % 8, 2, true, convert_to(repeat('x', 256), 'UTF8'), '\x', '', 'orders', '', '', '',
			CASE WHEN g <= 3000 THEN 1 ELSE 0 END, now() + interval '30 seconds', now(), now()
		FROM generate_series(1, 8000) g`)
	require.NoError(t, err)
	var ids []int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT array_agg(id ORDER BY id) FROM (
		SELECT id FROM eventcenter_messages WHERE send_status = 0 ORDER BY id LIMIT 500) x`).Scan(&ids))
	sent := make([]store.Sent, len(ids))
	for i, id := range ids {
		sent[i] = store.Sent{ID: id, Ref: "orders/0@" + fmt.Sprint(i)}
	}
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // EXPLAIN ANALYZE of an UPDATE, rolled back
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+postgres.MarkSentSQL,
		time.Now(), ids, postgres.SentRefs(sent)).Scan(&doc))
	require.Len(t, doc, 1)
	var walk func(n planNode)
	walk = func(n planNode) {
		require.LessOrEqual(t, n.Loops, 1.0, "%s runs %v times in one statement", n.Type, n.Loops)
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(doc[0].Plan)
}

// planNode is a node of EXPLAIN (ANALYZE, FORMAT JSON).
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Loops    float64    `json:"Actual Loops"`
	Rows     float64    `json:"Actual Rows"`
	Plans    []planNode `json:"Plans"`
	// Shared buffers hit and read (EXPLAIN BUFFERS), this node and below.
	SharedHit  int64 `json:"Shared Hit Blocks"`
	SharedRead int64 `json:"Shared Read Blocks"`
}

// Buffers is the shared buffers the plan touched (hit or read).
func (n planNode) Buffers() int64 { return n.SharedHit + n.SharedRead }

// Claims read the due rows of each partition in order from the partial
// index and stop at the limit, on a table never analyzed too: with 40,000
// rows due, a claim of 100 reads at most 100 per partition and sorts no
// more than that. A claim that orders "partition = ANY(...)" by due time,
// which that index cannot give, reads and sorts every
// due row (a sequential scan and an on-disk sort of 100,000 rows, 40 ms, in
// every claim of a check-back backlog).
func TestClaimPlansReadThePartialIndexInOrder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(ctx, pool))
	// 40,000 due prepares and 40,000 due sends over 8 partitions, plus
	// 40,000 sent rows; never analyzed.
	_, err := pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
		payload, headers, target, topic, forward_key, tag, verify, verify_next_at, send_status, send_next_at, created_at, updated_at)
		SELECT 'b', 'k' || g, g % 8, CASE WHEN g % 3 = 0 THEN 1 ELSE 2 END, true, convert_to(repeat('x', 256), 'UTF8'), '\x',
			'', 'orders', '', '', '', now() - interval '1 minute' + g * interval '1 microsecond',
			CASE WHEN g % 3 = 1 THEN 1 ELSE 0 END, now() - interval '1 minute' + g * interval '1 microsecond', now(), now()
		FROM generate_series(1, 120000) g`)
	require.NoError(t, err)

	const limit = 100
	parts := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			_, err := pool.Exec(ctx, `ANALYZE eventcenter_messages`)
			require.NoError(t, err)
		}
		checkClaimPlans(t, pool, analyzed, limit, parts)
	}
}

func checkClaimPlans(t *testing.T, pool *pgxpool.Pool, analyzed bool, limit int, parts []int32) {
	ctx := t.Context()
	for name, q := range map[string]struct{ sql, index string }{
		"sends": {postgres.ClaimSendsSQL, "eventcenter_messages_send_due"},
	} {
		t.Run(fmt.Sprintf("%s/analyzed=%v", name, analyzed), func(t *testing.T) {
			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer tx.Rollback(ctx) //nolint:errcheck // EXPLAIN ANALYZE of an UPDATE, rolled back
			now := time.Now()
			var doc []struct {
				Plan planNode `json:"Plan"`
			}
			require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+q.sql,
				now.Add(time.Minute), int64(7), parts, now, limit).Scan(&doc))
			require.Len(t, doc, 1)
			require.EqualValues(t, limit, doc[0].Plan.Rows, "rows claimed")
			usedIndex := false
			var walk func(n planNode)
			walk = func(n planNode) {
				if n.Type == "Seq Scan" {
					require.NotEqual(t, "eventcenter_messages", n.Relation, "a claim scans the whole table")
				}
				if n.Index == q.index {
					usedIndex = true
					require.LessOrEqual(t, n.Rows, float64(limit), "rows read from %s per partition", q.index)
				}
				require.LessOrEqual(t, n.Rows*n.Loops, float64(2*limit*len(parts)), "%s reads too many rows", n.Type)
				if n.Type == "Sort" {
					require.LessOrEqual(t, n.Rows*n.Loops, float64(limit*len(parts)), "a claim sorts more than it may take")
				}
				for _, c := range n.Plans {
					walk(c)
				}
			}
			walk(doc[0].Plan)
			require.True(t, usedIndex, "the claim reads %s", q.index)
		})
	}
}

// A backlog of scheduled messages (committed, pending, due hours ahead)
// costs a claim nothing: the send claim walks the partial index of pending
// sends from its start up to now and stops, so the 200,000 scheduled rows
// are never read, analyzed or not, whether some rows are due or none.
// EVENTCENTER_PLAN_BACKLOG sets the backlog (docs/performance.md runs it
// with 1,000,000; -v logs each claim's time and buffers).
func TestClaimPlansSkipTheScheduledBacklog(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(ctx, pool))
	backlog, due := 200000, 300
	if n, err := strconv.Atoi(os.Getenv("EVENTCENTER_PLAN_BACKLOG")); err == nil && n > 0 {
		backlog = n
	}
	parts := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	claims := map[string]string{"sends": postgres.ClaimSendsSQL, "ordered": postgres.ClaimOrderedSendsSQL}
	// claim runs a claim of up to 1,000 under EXPLAIN ANALYZE, rolled
	// back, and returns the rows claimed and the shared buffers touched.
	claim := func(t *testing.T, sql string) (float64, int64) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck // EXPLAIN ANALYZE of an UPDATE, rolled back
		now := time.Now()
		var doc []struct {
			Plan planNode `json:"Plan"`
			Ms   float64  `json:"Execution Time"`
		}
		require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+sql,
			now.Add(time.Minute), int64(7), parts, now, 1000).Scan(&doc))
		defer t.Logf("claimed %v among %d scheduled rows: %.1f ms, %d buffers", doc[0].Plan.Rows, backlog, doc[0].Ms, doc[0].Plan.Buffers())
		require.Len(t, doc, 1)
		var rowsRead float64
		var walk func(n planNode)
		walk = func(n planNode) {
			if n.Type == "Seq Scan" {
				require.NotEqual(t, "eventcenter_messages", n.Relation, "a claim scans the whole table")
			}
			if n.Index == "eventcenter_messages_send_due" {
				rowsRead += n.Rows * n.Loops
			}
			for _, c := range n.Plans {
				walk(c)
			}
		}
		walk(doc[0].Plan)
		// Actual Rows is a mean per loop, rounded: one more per partition.
		require.LessOrEqual(t, rowsRead, float64(doc[0].Plan.Rows)+float64(len(parts)), "rows read from the pending-send index")
		return doc[0].Plan.Rows, doc[0].Plan.Buffers()
	}
	insert := func(prefix string, n int, dueAt string) {
		t.Helper()
		_, err := pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
			payload, headers, target, topic, forward_key, tag, verify, send_status, send_next_at, deliver_at, created_at, updated_at, decided_at)
			SELECT 'b', $1 || g, g % 8, 2, true, convert_to(repeat('x', 256), 'UTF8'), '\x', '', 'orders', '', '', '', 0,
				`+dueAt+`, `+dueAt+`, now(), now(), now()
			FROM generate_series(1, $2::int) g`, prefix, n)
		require.NoError(t, err)
	}

	// Rows as a committed scheduled message is written: send_next_at =
	// deliver_at, an hour and more ahead. Nothing is due.
	insert("s", backlog, "now() + interval '1 hour' + g * interval '86 millisecond'") // a million over a day
	for name, sql := range claims {
		t.Run(name+"/none due", func(t *testing.T) {
			rows, buffers := claim(t, sql)
			require.Zero(t, rows)
			require.Less(t, buffers, int64(100), "buffers touched by a claim that finds nothing due")
		})
	}
	insert("due", due, "now() - interval '1 second'")
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			_, err := pool.Exec(ctx, `ANALYZE eventcenter_messages`)
			require.NoError(t, err)
		}
		for name, sql := range claims {
			t.Run(fmt.Sprintf("%s/some due/analyzed=%v", name, analyzed), func(t *testing.T) {
				rows, buffers := claim(t, sql)
				require.EqualValues(t, due, rows, "every due row claimed")
				// The update of a claimed row touches its heap page and a
				// path down each index: tens of buffers, none per
				// scheduled row.
				require.Less(t, buffers, int64(50*due), "buffers touched")
			})
		}
	}
}

// MarkSent keeps any broker reference as it was, through its JSON
// encoding.
func TestMarkSentKeepsReferencesVerbatim(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t, time.Now)
	refs := []string{"orders/3@17", `quote " back \\ slash`, "tab\tnewline\n\x01", "héllo ✓", ""}
	sent := make([]store.Sent, len(refs))
	for i, ref := range refs {
		key := fmt.Sprint("k", i)
		res, err := s.Apply(ctx, store.ApplyRequest{SendLease: time.Minute, Changes: []store.Change{
			storetest.Prepare("b", key, 0, time.Now()), storetest.Commit("b", key, 0, time.Now()),
		}})
		require.NoError(t, err)
		require.Len(t, res.Sendable, 1)
		sent[i] = store.Sent{ID: res.Sendable[0].ID, Ref: ref}
	}
	require.NoError(t, s.MarkSent(ctx, sent))
	for i, ref := range refs {
		m, err := s.Get(ctx, "b", fmt.Sprint("k", i))
		require.NoError(t, err)
		require.Equal(t, state.SendSent, m.SendStatus)
		require.Equal(t, ref, m.SendRef)
	}
}

// The orphan-commit gauges are read every few seconds by every instance:
// they must read the partial index of orphans, never the whole table.
func TestOrphanCommitsPlanUsesThePartialIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(ctx, pool))
	_, err := pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
		payload, headers, target, topic, forward_key, tag, verify, send_status, created_at, updated_at)
		SELECT 'b' || g % 3, 'k' || g, g % 8, 2, g % 10000 <> 0, '\x00', '\x', '', 'orders', '', '', '', 1, now(), now()
		FROM generate_series(1, 50000) g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE eventcenter_messages`)
	require.NoError(t, err)
	plan := explain(t, pool, postgres.OrphanCommitsSQL)
	require.Contains(t, plan, "eventcenter_messages_orphan_commits", plan)
	require.NotContains(t, plan, "Seq Scan", plan)
}

// explain returns the plan of EXPLAIN sql, one line per plan line.
func explain(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, sql string, args ...any) string {
	t.Helper()
	rows, err := q.Query(t.Context(), "EXPLAIN "+sql, args...)
	require.NoError(t, err)
	var plan []string
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan = append(plan, line)
	}
	require.NoError(t, rows.Err())
	return strings.Join(plan, "\n")
}

// The lease and wake of the next messages after an ordered sent mark look
// each sent row up by its primary key and its queue's head through the
// holders' index, whether or not the table was analyzed: never a scan of
// the messages.
func TestClaimNextPlanUsesThePrimaryKeyAndTheHolders(t *testing.T) {
	t.Parallel()
	for _, analyzed := range []bool{false, true} {
		t.Run(fmt.Sprintf("analyzed=%v", analyzed), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			pool := pgtest.Pool(t)
			require.NoError(t, postgres.Migrate(ctx, pool))
			// 50,000 ordered messages of 10,000 keys, one in ten still
			// pending (holding its key).
			_, err := pool.Exec(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
				payload, headers, target, topic, forward_key, tag, verify, send_status, order_key, order_seq, send_next_at, created_at, updated_at)
				SELECT 'b', 'k' || g, g % 8, 2, true, '\x00', '\x', 'kafka', 'orders', '', '', '', CASE WHEN g % 10 = 0 THEN 0 ELSE 1 END,
					'o' || (g % 10000), 1 + g / 10000, now(), now(), now()
				FROM generate_series(1, 50000) g`)
			require.NoError(t, err)
			if analyzed {
				_, err = pool.Exec(ctx, `ANALYZE eventcenter_messages`)
				require.NoError(t, err)
			}
			ids := make([]int64, 200)
			for i := range ids {
				ids[i] = int64(i*97 + 1)
			}
			now := time.Now()
			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer tx.Rollback(ctx) //nolint:errcheck // EXPLAIN only
			plan := explain(t, tx, postgres.ClaimNextSQL, now.Add(time.Minute), int64(7), ids, []int32{0, 1, 2, 3}, now)
			require.Contains(t, plan, "eventcenter_messages_pkey", plan)
			require.Contains(t, plan, "eventcenter_messages_order_holders", plan)
			require.NotContains(t, plan, "Seq Scan", plan)
		})
	}
}
