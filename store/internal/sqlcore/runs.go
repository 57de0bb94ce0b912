package sqlcore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// runChunk bounds the heads whose followers one statement reads (six
// parameters each).
const runChunk = 50

// ClaimRuns leases the run (store.Claim.Run) behind each head of heads,
// which the caller has just leased: the next
// messages of the head's queue that store.RunOf keeps, within
// store.RunBudget. db must be a transaction: the
// followers are read locked (skipping rows another transaction holds,
// which ends the run there) and leased as their head is (its lease token,
// until its due time). It returns
// heads with each run right after its head (store.Runs).
//
// Only the claimer holding a head's lease leases the messages behind it:
// every other claim skips them (an earlier message of their key, the
// head, holds it), and MarkSentClaimNext leases a queue's lowest holder
// only, so no two claimers lease the same follower.
func (d *Dialect[T]) ClaimRuns(ctx context.Context, db DB, heads []state.Message, c store.Claim, now time.Time) ([]state.Message, error) {
	if !c.Ordered || c.Run <= 1 {
		return heads, nil
	}
	take := store.RunBudget(heads, c)
	type want struct {
		head *state.Message
		n    int64
	}
	var wants []want
	seen := map[store.OrderRef]bool{}
	for i := range heads {
		h := &heads[i]
		r := store.OrderOf(h)
		if !store.RunHead(h) || seen[r] {
			continue
		}
		seen[r] = true
		if n := take(h, c.Run-1); n > 0 {
			wants = append(wants, want{head: h, n: int64(n)})
		}
	}
	if len(wants) == 0 {
		return heads, nil
	}
	runs := map[int64][]state.Message{}
	for lo := 0; lo < len(wants); lo += runChunk {
		chunk := wants[lo:min(lo+runChunk, len(wants))]
		w := &where[T]{d: d}
		var b strings.Builder
		for i, x := range chunk {
			if i > 0 {
				b.WriteString(" OR ")
			}
			h := x.head
			fmt.Fprintf(&b, "(biz_id = %s AND order_key = %s AND target = %s AND topic = %s AND order_seq > %s AND order_seq <= %s)",
				w.next(h.BizID), w.next(h.OrderKey), w.next(h.Target), w.next(h.Topic), w.next(h.OrderSeq), w.next(h.OrderSeq+x.n))
		}
		lock := ""
		if d.ForUpdate != "" {
			lock = d.ForUpdate + " SKIP LOCKED"
		}
		q := `SELECT ` + d.Columns + ` FROM eventcenter_messages WHERE ` + HoldsOrder("") + ` AND (` + b.String() + `)` + lock
		found, err := d.Messages(ctx, db, q, w.args...)
		if err != nil {
			return nil, fmt.Errorf("read the runs behind %d heads: %w", len(chunk), err)
		}
		bySeq := make(map[store.OrderRef]map[int64]*state.Message, len(chunk))
		for i := range found {
			m := &found[i]
			r := store.OrderOf(m)
			if bySeq[r] == nil {
				bySeq[r] = map[int64]*state.Message{}
			}
			bySeq[r][m.OrderSeq] = m
		}
		type lease struct {
			token int64
			until time.Time
		}
		ids := map[lease][]any{}
		for _, x := range chunk {
			h := x.head
			q := bySeq[store.OrderOf(h)]
			for seq := h.OrderSeq + 1; seq <= h.OrderSeq+x.n; seq++ {
				m := q[seq]
				if m == nil || !store.RunOf(h, m, seq, now) {
					break
				}
				m.LeaseToken, m.SendNextAt = h.LeaseToken, h.SendNextAt
				runs[h.ID] = append(runs[h.ID], *m)
				l := lease{h.LeaseToken, h.SendNextAt}
				ids[l] = append(ids[l], m.ID)
			}
		}
		for l, ids := range ids {
			ps := make([]string, len(ids))
			for i := range ids {
				ps[i] = d.Param(i + 3)
			}
			rows, err := db.Query(ctx, `UPDATE eventcenter_messages SET send_next_at = `+d.Param(1)+`, lease_token = `+d.Param(2)+
				` WHERE id IN (`+strings.Join(ps, ", ")+`)`, append([]any{d.TimeArg(l.until), l.token}, ids...)...)
			if err != nil {
				return nil, fmt.Errorf("lease the runs behind %d heads: %w", len(chunk), err)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, fmt.Errorf("lease the runs behind %d heads: %w", len(chunk), err)
			}
		}
	}
	return store.Runs(heads, runs), nil
}
