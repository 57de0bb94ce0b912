package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

// ckBizSQL lists the bizIDs with PREPARED rows by skipping from one to
// the next in eventcenter_messages_verify_due_biz (biz_id, verify_next_at,
// partition) WHERE status = 1: one probe per bizID.
var ckBizSQL = `WITH RECURSIVE biz(b) AS (
		SELECT MIN(biz_id) FROM eventcenter_messages WHERE ` + sqlcore.IsPrepared() + `
		UNION ALL
		SELECT (SELECT MIN(biz_id) FROM eventcenter_messages WHERE ` + sqlcore.IsPrepared() + ` AND biz_id > b)
		FROM biz WHERE b IS NOT NULL)
	SELECT b FROM biz WHERE b IS NOT NULL`

// ckCandidatesSQL is up to ? due check-backs of one bizID in the given
// partitions, oldest due first, read from the same index in due order.
var ckCandidatesSQL = `SELECT id, verify_next_at FROM eventcenter_messages INDEXED BY eventcenter_messages_verify_due_biz
	WHERE biz_id = ? AND ` + sqlcore.IsPrepared() + ` AND verify_next_at <= ?
		AND partition IN (SELECT value FROM json_each(?))
	ORDER BY verify_next_at LIMIT ?`

var ckLeaseSQL = `UPDATE eventcenter_messages SET verify_next_at = ?, lease_token = ?,
		verify_attempts = verify_attempts + 1
	WHERE id IN (SELECT value FROM json_each(?)) AND ` + sqlcore.IsPrepared() + ` AND verify_next_at <= ?
	RETURNING ` + codec.Columns

type ckCandidate struct {
	bizID string
	id    int64
	due   int64
}

// claimFairCheckbacks is ClaimCheckbacks with Claim.FairCheckbacks: in one
// write transaction, up to Limit candidates of every bizID, store.Pick,
// then the lease of the picked.
func (s *Store) claimFairCheckbacks(ctx context.Context, c store.Claim) ([]state.Message, error) {
	return sqlcore.Claim(c, func() ([]state.Message, error) {
		now := codec.Time(s.now())
		var ms []state.Message
		err := s.write(ctx, "claim checkbacks", func(tx *sql.Tx) error {
			bizIDs, err := ckBizIDs(ctx, tx)
			if err != nil {
				return err
			}
			parts := partitionsJSON(c.Partitions)
			var cands []ckCandidate
			for _, b := range bizIDs {
				got, err := ckBizCandidates(ctx, tx, b, now.UnixMicro(), parts, c.Limit)
				if err != nil {
					return err
				}
				cands = append(cands, got...)
			}
			slices.SortFunc(cands, func(a, b ckCandidate) int { return cmp.Or(cmp.Compare(a.due, b.due), cmp.Compare(a.id, b.id)) })
			cands = store.Pick(c.FairCheckbacks, c.Limit, cands, func(x *ckCandidate) string { return x.bizID })
			if len(cands) == 0 {
				ms = nil
				return nil
			}
			ids := make([]int64, len(cands))
			for i, x := range cands {
				ids[i] = x.id
			}
			b, _ := json.Marshal(ids) // cannot fail for []int64
			ms, err = dialect.Messages(ctx, sqlcore.SQLDB(tx), ckLeaseSQL, now.Add(c.Lease).UnixMicro(), codec.LeaseToken(),
				string(b), now.UnixMicro())
			return err
		})
		return ms, err
	})
}

func ckBizIDs(ctx context.Context, tx *sql.Tx) ([]string, error) {
	rows, err := tx.QueryContext(ctx, ckBizSQL)
	if err != nil {
		return nil, fmt.Errorf("list bizIDs with check-backs: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list bizIDs with check-backs: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list bizIDs with check-backs: %w", err)
	}
	return ids, nil
}

func ckBizCandidates(ctx context.Context, tx *sql.Tx, bizID string, now int64, parts string, limit int) ([]ckCandidate, error) {
	rows, err := tx.QueryContext(ctx, ckCandidatesSQL, bizID, now, parts, limit)
	if err != nil {
		return nil, fmt.Errorf("check-back candidates of bizID %q: %w", bizID, err)
	}
	defer func() { _ = rows.Close() }()
	var out []ckCandidate
	for rows.Next() {
		x := ckCandidate{bizID: bizID}
		if err := rows.Scan(&x.id, &x.due); err != nil {
			return nil, fmt.Errorf("check-back candidates of bizID %q: %w", bizID, err)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check-back candidates of bizID %q: %w", bizID, err)
	}
	return out, nil
}
