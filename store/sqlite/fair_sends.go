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
		var ms []state.Message
		err := s.write(ctx, "claim sends (fair)", func(tx *sql.Tx) error {
			ids, err := pickFair(ctx, tx, c, c.FairSends, fairBizSQL, cand, now.UnixMicro())
			if err != nil || ids == "" {
				ms = nil
				return err
			}
			ms, err = dialect.Messages(ctx, sqlcore.SQLDB(tx), `UPDATE eventcenter_messages SET send_next_at = ?, lease_token = ?
				WHERE id IN (SELECT value FROM json_each(?)) RETURNING `+codec.Columns,
				now.Add(c.Lease).UnixMicro(), codec.LeaseToken(), ids)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("claim sends (fair): %w", err)
		}
		return ms, nil
	})
}

// candidate is a row a fair claim (sends or check-backs) may pick.
type candidate struct {
	bizID   string
	id, due int64
}

// pickFair is the choice of both fair claims: the bizIDs bizSQL lists,
// up to f.Cap of each one's oldest due rows by candSQL (arguments bizID,
// now, the claimed partitions as JSON, how many; columns id and due),
// store.Pick; it returns the picked ids as a JSON array, "" for none.
func pickFair(ctx context.Context, tx *sql.Tx, c store.Claim, f *store.Fair, bizSQL, candSQL string, now int64) (string, error) {
	bizIDs, err := queryStrings(ctx, tx, bizSQL)
	if err != nil {
		return "", fmt.Errorf("list bizIDs: %w", err)
	}
	parts := partitionsJSON(c.Partitions)
	var cands []candidate
	for _, b := range bizIDs {
		n := f.Cap(b, c.Limit)
		if n == 0 {
			continue
		}
		if cands, err = appendCandidates(ctx, tx, cands, candSQL, b, now, parts, n); err != nil {
			return "", err
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int { return cmp.Or(cmp.Compare(a.due, b.due), cmp.Compare(a.id, b.id)) })
	cands = store.Pick(f, c.Limit, cands, func(x *candidate) string { return x.bizID })
	if len(cands) == 0 {
		return "", nil
	}
	ids := make([]int64, len(cands))
	for i, x := range cands {
		ids[i] = x.id
	}
	b, _ := json.Marshal(ids) // cannot fail for []int64
	return string(b), nil
}

// appendCandidates appends up to n candidates of bizID by candSQL.
func appendCandidates(ctx context.Context, tx *sql.Tx, out []candidate, candSQL, bizID string, now int64, parts string, n int) ([]candidate, error) {
	rows, err := tx.QueryContext(ctx, candSQL, bizID, now, parts, n)
	if err != nil {
		return nil, fmt.Errorf("candidates of bizID %q: %w", bizID, err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		x := candidate{bizID: bizID}
		if err := rows.Scan(&x.id, &x.due); err != nil {
			return nil, fmt.Errorf("candidates of bizID %q: %w", bizID, err)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("candidates of bizID %q: %w", bizID, err)
	}
	return out, nil
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
