package sqlite

import (
	"context"
	"database/sql"

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

// claimFairCheckbacks is ClaimCheckbacks with Claim.FairCheckbacks: in one
// write transaction, pickFair (as the fair send claim), then the lease of
// the picked.
func (s *Store) claimFairCheckbacks(ctx context.Context, c store.Claim) ([]state.Message, error) {
	return sqlcore.Claim(c, func() ([]state.Message, error) {
		now := codec.Time(s.now())
		var ms []state.Message
		err := s.write(ctx, "claim checkbacks", func(tx *sql.Tx) error {
			ids, err := pickFair(ctx, tx, c, c.FairCheckbacks, ckBizSQL, ckCandidatesSQL, now.UnixMicro())
			if err != nil || ids == "" {
				ms = nil
				return err
			}
			ms, err = dialect.MessagesOf(ctx, sqlcore.SQLDB(tx), len(ids), ckLeaseSQL, now.Add(c.Lease).UnixMicro(), codec.LeaseToken(),
				ids, now.UnixMicro())
			return err
		})
		return ms, err
	})
}
