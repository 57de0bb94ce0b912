package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

// fairBizSQL lists the bizIDs with due sends: MIN over the second column
// of eventcenter_messages_send_due_biz grouped by the first is a loose
// index scan, one probe per bizID however long its backlog.
const fairBizSQL = `SELECT biz_id, MIN(send_due_at) FROM eventcenter_messages
	WHERE send_due_at <= ? GROUP BY biz_id`

// fairCandSQL reads and locks one bizID's oldest due rows in the claimed
// partitions, in index order, skipping rows another transaction holds.
func fairCandSQL(nparts int, free string) string {
	return `SELECT ` + columns + ` FROM eventcenter_messages FORCE INDEX (eventcenter_messages_send_due_biz)
		WHERE biz_id = ? AND send_due_at <= ? AND ` + "`partition`" + ` IN (` + sqlcore.List(nparts) + `)` + free + `
		ORDER BY send_due_at, id LIMIT ? FOR UPDATE SKIP LOCKED`
}

// claimFair runs a fair send claim (store.Fair) in one transaction: the
// bizIDs, each one's candidates (locked), store.Pick, then the update
// of the picked rows; the candidates not picked are unlocked at the commit.
// Retried like the plain claim.
func (s *Store) claimFair(ctx context.Context, c store.Claim) ([]state.Message, error) {
	free := ""
	if c.Ordered {
		free = " AND " + sqlcore.OrderFree("eventcenter_messages")
	}
	cand := fairCandSQL(len(c.Partitions), free)
	return sqlcore.Claim(c, func() ([]state.Message, error) {
		for attempt := 1; ; attempt++ {
			ms, err := s.claimFairOnce(ctx, c, cand)
			if err == nil {
				return ms, nil
			}
			if !retryable(err) || attempt >= s.tries || ctx.Err() != nil {
				return nil, fmt.Errorf("claim sends (fair, try %d): %w", attempt, translate(err))
			}
			s.log.Debug("retrying store claim", "what", "claim sends (fair)", "try", attempt, "err", err)
		}
	})
}

func (s *Store) claimFairOnce(ctx context.Context, c store.Claim, cand string) ([]state.Message, error) {
	now := codec.Time(s.now())
	until, token := now.Add(c.Lease), codec.LeaseToken()
	var picked []state.Message
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		picked = nil
		rows, err := tx.QueryContext(ctx, fairBizSQL, now)
		if err != nil {
			return err
		}
		var bizs []string
		for rows.Next() {
			var biz string
			var oldest sql.NullTime
			if err := rows.Scan(&biz, &oldest); err != nil {
				_ = rows.Close()
				return err
			}
			bizs = append(bizs, biz)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		cands, err := lockCandidates(ctx, tx, cand, bizs, c, c.FairSends, now)
		if err != nil {
			return err
		}
		store.SortByDue(cands, func(m *state.Message) time.Time { return m.SendNextAt })
		picked = store.Pick(c.FairSends, c.Limit, cands, store.BizIDOf)
		if len(picked) == 0 {
			return nil
		}
		ids := make([]any, len(picked))
		for i := range picked {
			ids[i] = picked[i].ID
			picked[i].LeaseToken = token
			picked[i].SendNextAt = until
		}
		_, err = tx.ExecContext(ctx, `UPDATE eventcenter_messages SET send_next_at = ?, lease_token = ? WHERE id IN (`+
			sqlcore.List(len(ids))+`)`, append([]any{until, token}, ids...)...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return picked, nil
}

// lockCandidates locks, for each of bizIDs, up to f.Cap of its oldest due
// rows by q (arguments bizID, now, the claimed partitions, how many): the
// candidates of both fair claims, in one list. A bizID capped at 0 is not
// read.
func lockCandidates(ctx context.Context, tx *sql.Tx, q string, bizIDs []string, c store.Claim, f *store.Fair,
	now time.Time) ([]state.Message, error) {
	var out []state.Message
	for _, biz := range bizIDs {
		n := f.Cap(biz, c.Limit)
		if n == 0 {
			continue
		}
		args := make([]any, 0, len(c.Partitions)+3)
		args = append(args, biz, now)
		for _, p := range c.Partitions {
			args = append(args, p)
		}
		got, err := dialect.Messages(ctx, sqlcore.SQLDB(tx), q, append(args, n)...)
		if err != nil {
			return nil, fmt.Errorf("candidates of bizID %q: %w", biz, err)
		}
		out = append(out, got...)
	}
	return out, nil
}
