package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

// fairClaimSQL is a fair send claim (store.Fair) in one statement:
//
//  1. biz: every bizID of the table, by a skip scan of an index of every
//     row (biz_id first): one index probe per bizID, however long its
//     backlog. Not of the partial index of pending sends: its first
//     entries are those of rows already claimed or sent, dead until a
//     vacuum, and every claim walked them again (a drain of 200,000:
//     claims grew from 150 ms to 1.2 s, 1,756 msg/s against 17,543 now;
//     BenchmarkNoisyNeighbourBacklog). A bizID without due rows costs one
//     more probe in step 2.
//  2. cand: per bizID its weight and cap ($6–$8; not named: weight 1,
//     capped by the limit), then its oldest due rows in the claimed
//     partitions, read in index order and stopped at the cap (a LATERAL
//     per bizID), ranked 1, 2, …
//  3. the Limit candidates of lowest rank/weight (ties: the earlier due,
//     then the lower id; store.Pick's rule) are locked by id, skipping
//     rows another transaction holds, checked again under the lock and
//     updated, as in claimSQL.
//
// The planner cannot know how many bizIDs and rows per bizID there are; on
// an analyzed table it guesses 100 bizIDs of thousands of rows each, and
// the cost passes jit_above_cost: compiling the plan took 900 ms of a
// 940 ms claim that reads 1,100 rows. So the claim runs with JIT off (SET
// LOCAL, in its own transaction). TestFairClaimPlan checks the plan and
// the time on a backlog of one bizID.
func fairClaimSQL(free string) string {
	pending := sqlcore.PendingSend("has_body")
	return `WITH RECURSIVE biz(b) AS (
		(SELECT biz_id FROM eventcenter_messages ORDER BY biz_id LIMIT 1)
		UNION ALL
		SELECT (SELECT m.biz_id FROM eventcenter_messages m WHERE m.biz_id > biz.b ORDER BY m.biz_id LIMIT 1)
		FROM biz WHERE biz.b IS NOT NULL
	), cand AS (
		SELECT c.id, c.send_next_at, w.weight,
			row_number() OVER (PARTITION BY biz.b ORDER BY c.send_next_at, c.id) AS rk
		FROM biz
		CROSS JOIN LATERAL (SELECT coalesce(max(x.weight), 1) AS weight, coalesce(max(x.cap), $5) AS cap
			FROM unnest($6::text[], $7::int[], $8::int[]) AS x(biz_id, weight, cap) WHERE x.biz_id = biz.b) w
		CROSS JOIN LATERAL (SELECT id, send_next_at FROM eventcenter_messages
			WHERE biz_id = biz.b AND ` + pending + ` AND send_next_at <= $4 AND partition = ANY($3::int[])` + free + `
			ORDER BY send_next_at, id LIMIT least(w.cap, $5)) c
		WHERE biz.b IS NOT NULL
	)
	UPDATE eventcenter_messages SET send_next_at = $1, lease_token = $2
	WHERE id = ANY(ARRAY(SELECT id FROM eventcenter_messages
		WHERE id = ANY(ARRAY(SELECT id FROM cand ORDER BY rk::float8 / weight, send_next_at, id LIMIT $5))
		AND ` + pendingSendByID + ` AND send_next_at <= $4` + free + `
		FOR UPDATE SKIP LOCKED))
	RETURNING ` + columns
}

var (
	fairClaimSendsSQL        = fairClaimSQL("")
	fairClaimOrderedSendsSQL = fairClaimSQL(" AND " + orderFree("eventcenter_messages"))
)

// claimFair runs a fair send claim.
func (s *Store) claimFair(ctx context.Context, c store.Claim) ([]state.Message, error) {
	q := fairClaimSendsSQL
	if c.Ordered {
		q = fairClaimOrderedSendsSQL
	}
	return sqlcore.Claim(c, func() ([]state.Message, error) {
		names, weights, caps := fairArgs(c.FairSends, c.Limit)
		now := codec.Time(s.now())
		var ms []state.Message
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL jit = off"); err != nil {
				return err
			}
			var err error
			ms, err = dialect.Messages(ctx, pgDB{tx}, q, now.Add(c.Lease), codec.LeaseToken(), c.Partitions, now, c.Limit,
				names, weights, caps)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("claim sends (fair): %w", translate(err))
		}
		return ms, nil
	})
}

// fairArgs lists the bizIDs f names with their weights and caps.
func fairArgs(f *store.Fair, limit int) (names []string, weights, caps []int32) {
	seen := map[string]bool{}
	for biz := range f.Weights {
		seen[biz] = true
	}
	for biz := range f.Max {
		seen[biz] = true
	}
	for biz := range seen {
		names = append(names, biz)
	}
	slices.Sort(names)
	for _, biz := range names {
		weights = append(weights, int32(min(f.Weight(biz), 1<<30)))
		caps = append(caps, int32(f.Cap(biz, limit)))
	}
	return names, weights, caps
}
