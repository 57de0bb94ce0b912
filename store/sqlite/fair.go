package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

// fairBizSQL lists the bizIDs with pending sends by a skip scan of the
// partial index eventcenter_messages_send_due_biz: one probe per bizID,
// however long its backlog.
var fairBizSQL = `WITH RECURSIVE biz(b) AS (
		SELECT (SELECT biz_id FROM eventcenter_messages WHERE ` + dialect.PendingSend() + ` ORDER BY biz_id LIMIT 1)
		UNION ALL
		SELECT (SELECT biz_id FROM eventcenter_messages WHERE ` + dialect.PendingSend() + ` AND biz_id > biz.b
			ORDER BY biz_id LIMIT 1) FROM biz WHERE biz.b IS NOT NULL
	) SELECT b FROM biz WHERE b IS NOT NULL`

// fairCandSQL reads one bizID's oldest due rows (id and due time) in the
// claimed partitions, in index order.
func fairCandSQL(free string) string {
	return `SELECT id, send_next_at FROM eventcenter_messages INDEXED BY eventcenter_messages_send_due_biz
		WHERE biz_id = ? AND ` + dialect.PendingSend() + ` AND send_next_at <= ?
		AND partition IN (SELECT value FROM json_each(?))` + free + `
		ORDER BY send_next_at, id LIMIT ?`
}

var (
	fairCandSendsSQL        = fairCandSQL("")
	fairCandOrderedSendsSQL = fairCandSQL(" AND " + sqlcore.OrderFree("eventcenter_messages"))
)

// claimFair runs a fair send claim (store.Fair) in one write transaction:
// the bizIDs, each one's candidates, store.Pick, then the update of the
// picked rows.
func (s *Store) claimFair(ctx context.Context, c store.Claim) ([]state.Message, error) {
	cand := fairCandSendsSQL
	if c.Ordered {
		cand = fairCandOrderedSendsSQL
	}
	return sqlcore.Claim(c, func() ([]state.Message, error) {
		now := codec.Time(s.now())
		parts := partitionsJSON(c.Partitions)
		var ms []state.Message
		err := s.write(ctx, "claim sends (fair)", func(tx *sql.Tx) error {
			bizs, err := queryStrings(ctx, tx, fairBizSQL)
			if err != nil {
				return err
			}
			var cands []state.Message
			for _, biz := range bizs {
				n := c.FairSends.Cap(biz, c.Limit)
				if n == 0 {
					continue
				}
				rows, err := tx.QueryContext(ctx, cand, biz, now.UnixMicro(), parts, n)
				if err != nil {
					return err
				}
				for rows.Next() {
					var m state.Message
					var due int64
					if err := rows.Scan(&m.ID, &due); err != nil {
						_ = rows.Close()
						return err
					}
					m.BizID, m.SendNextAt = biz, time.UnixMicro(due)
					cands = append(cands, m)
				}
				if err := rows.Close(); err != nil {
					return err
				}
			}
			store.SortByDue(cands, func(m *state.Message) time.Time { return m.SendNextAt })
			picked := store.Pick(c.FairSends, c.Limit, cands, store.BizIDOf)
			if len(picked) == 0 {
				ms = nil
				return nil
			}
			ids := make([]int64, len(picked))
			for i := range picked {
				ids[i] = picked[i].ID
			}
			idsJSON, _ := json.Marshal(ids) // cannot fail for []int64
			ms, err = dialect.Messages(ctx, sqlcore.SQLDB(tx), `UPDATE eventcenter_messages SET send_next_at = ?, lease_token = ?
				WHERE id IN (SELECT value FROM json_each(?)) RETURNING `+codec.Columns,
				now.Add(c.Lease).UnixMicro(), codec.LeaseToken(), string(idsJSON))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("claim sends (fair): %w", err)
		}
		return ms, nil
	})
}

// queryStrings runs q and returns its one text column.
func queryStrings(ctx context.Context, tx *sql.Tx, q string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
