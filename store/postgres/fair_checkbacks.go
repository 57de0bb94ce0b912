package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

// ckCandidatesSQL lists, for every bizID with PREPARED rows, up to $3 of
// its due check-backs in the partitions $1 (due at $2 or before), each
// bizID's oldest due first. The bizIDs come from a skip scan of the index
// eventcenter_messages_verify_due_biz (biz_id, verify_next_at, partition)
// WHERE status = 1: one probe per bizID, however many rows it has; each
// bizID's rows are read from the same index in due order and stop at the
// limit. So a bizID with 100,000 stale PREPAREs costs a claim $3 index
// entries, not 100,000.
var ckCandidatesSQL = `WITH RECURSIVE biz(biz_id) AS (
		(SELECT biz_id FROM eventcenter_messages WHERE ` + sqlcore.IsPrepared() + ` ORDER BY biz_id LIMIT 1)
		UNION ALL
		SELECT (SELECT m.biz_id FROM eventcenter_messages m
			WHERE m.` + sqlcore.IsPrepared() + ` AND m.biz_id > biz.biz_id ORDER BY m.biz_id LIMIT 1)
		FROM biz WHERE biz.biz_id IS NOT NULL)
	SELECT c.biz_id, c.id FROM biz CROSS JOIN LATERAL (
		SELECT m.biz_id, m.id, m.verify_next_at FROM eventcenter_messages m
		WHERE m.biz_id = biz.biz_id AND m.` + sqlcore.IsPrepared() + ` AND m.verify_next_at <= $2
			AND m.partition = ANY($1::int[])
		ORDER BY m.verify_next_at LIMIT $3) c
	ORDER BY c.verify_next_at, c.id`

// ckLeaseSQL leases the picked candidates by id, skipping rows another
// transaction holds and checking them again under the lock (see claimSQL).
var ckLeaseSQL = `UPDATE eventcenter_messages
	SET verify_next_at = $1, lease_token = $2, verify_attempts = verify_attempts + 1
	WHERE id = ANY(ARRAY(SELECT id FROM eventcenter_messages
		WHERE id = ANY($3::bigint[]) AND (` + sqlcore.IsPrepared() + `) IS TRUE AND verify_next_at <= $4
		FOR UPDATE SKIP LOCKED))
	RETURNING ` + ckColumns

// ckColumns is what a check-back claim returns: every column but the
// payload, returned NULL. A check-back never reads the body, and the
// answer's apply loads the row again under its lock; a claim of 1,000
// messages of 256 bytes otherwise sends and decodes a quarter of a
// megabyte for nothing.
var ckColumns = strings.Replace(columns, " payload,", " NULL::bytea AS payload,", 1)

type ckCandidate struct {
	bizID string
	id    int64
}

// claimFairCheckbacks is ClaimCheckbacks: the candidates of every bizID,
// store.Pick (or, without Claim.FairCheckbacks, the oldest due), then the
// lease of the picked.
func (s *Store) claimFairCheckbacks(ctx context.Context, c store.Claim) ([]state.Message, error) {
	return sqlcore.Claim(c, func() ([]state.Message, error) {
		now := codec.Time(s.now())
		rows, err := s.pool.Query(ctx, ckCandidatesSQL, c.Partitions, now, c.Limit)
		if err != nil {
			return nil, fmt.Errorf("claim checkbacks: candidates: %w", translate(err))
		}
		var cands []ckCandidate
		for rows.Next() {
			var x ckCandidate
			if err := rows.Scan(&x.bizID, &x.id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("claim checkbacks: candidates: %w", translate(err))
			}
			cands = append(cands, x)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("claim checkbacks: candidates: %w", translate(err))
		}
		if c.FairCheckbacks != nil {
			cands = store.Pick(c.FairCheckbacks, c.Limit, cands, func(x *ckCandidate) string { return x.bizID })
		} else {
			// Oldest due first: the candidates are in that order, and
			// every row of the first Limit is among its bizID's first
			// Limit.
			cands = cands[:min(len(cands), c.Limit)]
		}
		if len(cands) == 0 {
			return nil, nil
		}
		ids := make([]int64, len(cands))
		for i, x := range cands {
			ids[i] = x.id
		}
		ms, err := dialect.MessagesOf(ctx, pgDB{s.pool}, len(ids), ckLeaseSQL, now.Add(c.Lease), codec.LeaseToken(), ids, now)
		if err != nil {
			return nil, fmt.Errorf("claim checkbacks: %w", translate(err))
		}
		return ms, nil
	})
}
