package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

// ckBizSQL lists the bizIDs with PREPARED rows: a loose index scan of an
// index leading with prepared_biz (eventcenter_messages_prepared or
// eventcenter_messages_verify_due_biz), one probe per bizID however many
// rows it has.
const ckBizSQL = `SELECT prepared_biz FROM eventcenter_messages
	WHERE prepared_biz IS NOT NULL GROUP BY prepared_biz`

// ckClaimSQL locks up to ? due check-backs of one bizID in the given
// partitions, oldest due first, reading eventcenter_messages_verify_due_biz
// in due order. The index is forced: left to itself MariaDB 10.11 read
// the partitions' due index, every bizID's rows, and sorted them
// (TestFairCheckbackClaimUsesItsIndex).
const ckClaimSQL = `SELECT %s FROM eventcenter_messages FORCE INDEX (eventcenter_messages_verify_due_biz)
	WHERE prepared_biz = ? AND verify_due_at <= ? AND ` + "`partition`" + ` IN (%s)
	ORDER BY verify_due_at LIMIT ? FOR UPDATE SKIP LOCKED`

// ckCandidates locks, for every bizID with due check-backs in c's
// partitions, up to c.Limit of them (lockCandidates, as the fair send
// claim; claimOnce then keeps store.Pick's and leases those; the others'
// locks end with the transaction). So a bizID
// with 100,000 stale PREPAREs costs a claim c.Limit rows, and another
// bizID's due rows are found however old the first one's are.
func ckCandidates(ctx context.Context, tx *sql.Tx, c store.Claim, now time.Time) ([]state.Message, error) {
	rows, err := tx.QueryContext(ctx, ckBizSQL)
	if err != nil {
		return nil, fmt.Errorf("list bizIDs with check-backs: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("list bizIDs with check-backs: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("list bizIDs with check-backs: %w", err)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list bizIDs with check-backs: %w", err)
	}
	return lockCandidates(ctx, tx, fmt.Sprintf(ckClaimSQL, columns, sqlcore.List(len(c.Partitions))), ids, c, c.FairCheckbacks, now)
}
