package sqlcore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// OrderSQL is what the ordering steps need of a dialect.
type OrderSQL struct {
	// Param returns the n-th (from 1) statement parameter.
	Param func(n int) string
	// Upsert ends the counters' INSERT: it adds the inserted last_seq to
	// an existing row's ("ON CONFLICT ... DO UPDATE", "ON DUPLICATE KEY
	// UPDATE").
	Upsert string
}

// PostgresUpsert and SQLiteUpsert are OrderSQL.Upsert for PostgreSQL and
// SQLite (the same clause), MySQLUpsert for MySQL and MariaDB.
const (
	PostgresUpsert = `ON CONFLICT (biz_id, order_key, target, topic) DO UPDATE SET last_seq = eventcenter_order_keys.last_seq + excluded.last_seq`
	SQLiteUpsert   = PostgresUpsert
	MySQLUpsert    = `ON DUPLICATE KEY UPDATE last_seq = last_seq + VALUES(last_seq)`
)

// HoldsOrder is state.Message.HoldsOrder in SQL for the row prefix a (""
// or "h."): sequenced, and pending or DEAD. A sequence is only assigned to
// a committed message with a body, and such a message stays committed.
func HoldsOrder(a string) string {
	return a + "order_seq > 0 AND " + a + "send_status IN (" + SendPending + ", " + SendDead + ")"
}

// OrderFree is "the row of table or alias a is not held back by its order
// key": it has no sequence, or no earlier-sequenced message of its queue
// holds the key. The claims add it with Claim.Ordered; the holders' index
// (eventcenter_messages_order_holders) answers the NOT EXISTS.
func OrderFree(a string) string {
	return `(` + a + `.order_seq = 0 OR NOT EXISTS (SELECT 1 FROM eventcenter_messages h
		WHERE h.biz_id = ` + a + `.biz_id AND h.order_key = ` + a + `.order_key AND h.target = ` + a + `.target
		AND h.topic = ` + a + `.topic AND ` + HoldsOrder("h.") + ` AND h.order_seq < ` + a + `.order_seq))`
}

// orderChunk bounds the queues of one ordering statement.
const orderChunk = 200

// order sequences the messages a batch made sendable that have an order
// key and no sequence, and with ordered drops from f.Sendable those held
// back by an earlier-sequenced message of their queue: they are written
// unleased and parked until park (due then, if park is zero), and woken
// when the key is freed (WakeSQL); a claim takes them once it is free.
//
// It returns the queues whose messages it parked.
func order(ctx context.Context, tx Tx, f *store.Folded, ordered bool, park time.Time, ah *ahead) (map[store.OrderRef]bool, error) {
	var need []*state.Message
	for _, m := range f.Sendable {
		if m.NeedsOrderSeq() {
			need = append(need, m)
		}
	}
	if ah != nil && ordered {
		return orderAhead(ctx, f, need, park, ah)
	}
	if st, ok := tx.(SeqHoldersTx); ok && ordered && len(need) > 0 {
		// The candidates are known before the numbering: every message
		// it numbers is one, and those with a sequence already.
		var cands []*state.Message
		for _, m := range f.Sendable {
			if m.OrderSeq > 0 || m.NeedsOrderSeq() {
				cands = append(cands, m)
			}
		}
		low, err := st.AssignSeqsHolders(ctx, need, Queues(cands), updatedIDs(f))
		if err != nil {
			return nil, fmt.Errorf("sequence order keys and read their holders: %w", err)
		}
		return f.DropHeld(low, park), nil
	}
	if len(need) > 0 {
		if err := tx.AssignSeqs(ctx, need); err != nil {
			return nil, fmt.Errorf("sequence order keys: %w", err)
		}
	}
	if !ordered {
		return nil, nil
	}
	var cands []*state.Message
	for _, m := range f.Sendable {
		if m.OrderSeq > 0 {
			cands = append(cands, m)
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	low, err := tx.Holders(ctx, Queues(cands), updatedIDs(f))
	if err != nil {
		return nil, fmt.Errorf("read order holders: %w", err)
	}
	return f.DropHeld(low, park), nil
}

// orderAhead is order's ordering step of an AheadTx: the numbering
// records where each queue's messages were sequenced, and a message whose
// predecessor was written ahead and is not confirmed yet is parked too.
func orderAhead(ctx context.Context, f *store.Folded, need []*state.Message, park time.Time, ah *ahead) (map[store.OrderRef]bool, error) {
	var cands []*state.Message
	for _, m := range f.Sendable {
		if m.OrderSeq > 0 || m.NeedsOrderSeq() {
			cands = append(cands, m)
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	low, prev, err := ah.tx.AssignSeqsAhead(ctx, need, ah.lastPositions(f, need), Queues(cands), updatedIDs(f))
	if err != nil {
		return nil, fmt.Errorf("sequence order keys and read their holders: %w", err)
	}
	numbered := make(map[*state.Message]bool, len(need))
	for _, m := range need {
		numbered[m] = true
	}
	ah.predecessors(f, numbered, prev, low)
	return f.DropHeldAhead(low, park, func(m *state.Message) bool { return ah.eligible(f, m) }), nil
}

// updatedIDs returns the ids of f's updated rows: their new state counts
// instead of the stored one when the holders are read.
func updatedIDs(f *store.Folded) []int64 {
	ids := make([]int64, 0, len(f.Updates))
	for _, m := range f.Updates {
		ids = append(ids, m.ID)
	}
	return ids
}

// SeqHoldersTx is a Tx that can run AssignSeqs and then Holders in one
// round trip (PostgreSQL: one pipelined batch). The holders are read
// after the counters are locked and numbered, as when the two run one
// after the other: a concurrent batch of the same queue has committed
// before the read, or waits for this one.
type SeqHoldersTx interface {
	AssignSeqsHolders(ctx context.Context, need []*state.Message, refs []store.OrderRef, exclude []int64) (map[store.OrderRef]int64, error)
}

// Queues returns the distinct queues of ms, sorted (counters are locked in
// this order by every transaction: no deadlock between two of them).
func Queues(ms []*state.Message) []store.OrderRef {
	seen := map[store.OrderRef]bool{}
	var out []store.OrderRef
	for _, m := range ms {
		r := store.OrderOf(m)
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	slices.SortFunc(out, CompareQueues)
	return out
}

// CompareQueues orders queues field by field: the order of their
// "bizID\x00orderKey\x00target\x00topic" strings, which every release
// locks counters in (the fields hold no NUL), without building them: the
// concatenation in each comparison was a tenth of the center's CPU in
// ectools bench with 10,000 order keys.
func CompareQueues(a, b store.OrderRef) int {
	return cmp.Or(strings.Compare(a.BizID, b.BizID), strings.Compare(a.OrderKey, b.OrderKey),
		strings.Compare(a.Target, b.Target), strings.Compare(a.Topic, b.Topic))
}

// SQLOrder runs the ordering steps of a SQL transaction.
type SQLOrder struct {
	DB  DB
	SQL OrderSQL
}

// queueWhere returns "(biz_id = ? AND ...) OR ..." for refs, its parameters
// numbered from first.
func (o SQLOrder) queueWhere(refs []store.OrderRef, first int) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, 4*len(refs))
	n := first
	for i, r := range refs {
		if i > 0 {
			b.WriteString(" OR ")
		}
		p := o.SQL.Param
		fmt.Fprintf(&b, "(biz_id = %s AND order_key = %s AND target = %s AND topic = %s)", p(n), p(n+1), p(n+2), p(n+3))
		n += 4
		args = append(args, r.BizID, r.OrderKey, r.Target, r.Topic)
	}
	return b.String(), args
}

// AssignSeqs implements Tx.AssignSeqs: it adds each queue's count of need
// to its counter (eventcenter_order_keys, one row per queue, created at
// its first message) and numbers need from the counters' new values, in
// batch order. The counter rows stay locked until the transaction ends: a
// concurrent batch of the same queue, on any center, waits and numbers
// after this one, so sequence order is the order the COMMITs were applied.
func (o SQLOrder) AssignSeqs(ctx context.Context, need []*state.Message) error {
	count := map[store.OrderRef]int64{}
	for _, m := range need {
		count[store.OrderOf(m)]++
	}
	all := Queues(need)
	last := make(map[store.OrderRef]int64, len(all))
	p := o.SQL.Param
	for lo := 0; lo < len(all); lo += orderChunk {
		refs := all[lo:min(lo+orderChunk, len(all))]
		var vals strings.Builder
		args := make([]any, 0, 5*len(refs))
		for i, r := range refs {
			if i > 0 {
				vals.WriteString(", ")
			}
			n := 5*i + 1
			fmt.Fprintf(&vals, "(%s, %s, %s, %s, %s)", p(n), p(n+1), p(n+2), p(n+3), p(n+4))
			args = append(args, r.BizID, r.OrderKey, r.Target, r.Topic, count[r])
		}
		rows, err := o.DB.Query(ctx, `INSERT INTO eventcenter_order_keys (biz_id, order_key, target, topic, last_seq) VALUES `+
			vals.String()+` `+o.SQL.Upsert, args...)
		if err != nil {
			return fmt.Errorf("count: %w", err)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("count: %w", err)
		}
		where, wargs := o.queueWhere(refs, 1)
		rows, err = o.DB.Query(ctx, `SELECT biz_id, order_key, target, topic, last_seq FROM eventcenter_order_keys WHERE `+where, wargs...)
		if err != nil {
			return fmt.Errorf("read counters: %w", err)
		}
		if err := readQueues(rows, last); err != nil {
			return fmt.Errorf("read counters: %w", err)
		}
	}
	return Number(need, count, last)
}

// Number numbers need, in order, so that each queue's last message gets
// last[queue] and the count[queue] before it the numbers below.
func Number(need []*state.Message, count, last map[store.OrderRef]int64) error {
	next := make(map[store.OrderRef]int64, len(count))
	for r, n := range count {
		l, ok := last[r]
		if !ok {
			return fmt.Errorf("counter of %s:%s (target %q, topic %q) not found after its update", r.BizID, r.OrderKey, r.Target, r.Topic)
		}
		next[r] = l - n + 1
	}
	for _, m := range need {
		r := store.OrderOf(m)
		m.OrderSeq = next[r]
		next[r]++
	}
	return nil
}

// readQueues reads rows of (biz_id, order_key, target, topic, n) into out
// and closes rows.
func readQueues(rows Rows, out map[store.OrderRef]int64) error {
	defer rows.Close()
	for rows.Next() {
		var r store.OrderRef
		var n int64
		if err := rows.Scan(&r.BizID, &r.OrderKey, &r.Target, &r.Topic, &n); err != nil {
			return err
		}
		out[r] = n
	}
	return rows.Err()
}

// Holders implements Tx.Holders.
func (o SQLOrder) Holders(ctx context.Context, refs []store.OrderRef, exclude []int64) (map[store.OrderRef]int64, error) {
	low := map[store.OrderRef]int64{}
	for lo := 0; lo < len(refs); lo += orderChunk {
		chunk := refs[lo:min(lo+orderChunk, len(refs))]
		where, args := o.queueWhere(chunk, 1)
		q := `SELECT biz_id, order_key, target, topic, min(order_seq) FROM eventcenter_messages WHERE ` +
			HoldsOrder("") + ` AND (` + where + `)`
		if len(exclude) > 0 {
			ps := make([]string, len(exclude))
			for i, id := range exclude {
				ps[i] = o.SQL.Param(len(args) + 1)
				args = append(args, id)
			}
			q += ` AND id NOT IN (` + strings.Join(ps, ", ") + `)`
		}
		rows, err := o.DB.Query(ctx, q+` GROUP BY biz_id, order_key, target, topic`, args...)
		if err != nil {
			return nil, err
		}
		if err := readQueues(rows, low); err != nil {
			return nil, err
		}
	}
	return low, nil
}

// HeadOf is the id of the head (the lowest-sequenced holder) of the queue
// of the row alias s, as a scalar subquery (NULL when none holds it).
func HeadOf(s string) string {
	return `(SELECT h.id FROM eventcenter_messages h WHERE ` + sameQueue("h", s) + ` AND ` + HoldsOrder("h.") + `
			ORDER BY h.order_seq LIMIT 1)`
}

// sameQueue is "p is in the queue of h" for row aliases p and h.
func sameQueue(p, h string) string {
	return p + ".biz_id = " + h + ".biz_id AND " + p + ".order_key = " + h + ".order_key AND " +
		p + ".target = " + h + ".target AND " + p + ".topic = " + h + ".topic"
}

// BlockedKeys implements store.Orderer: the heads (lowest-sequenced
// holders) that are DEAD or have failed, oldest commit first, each with
// the number of holders behind it.
func (d *Dialect[T]) BlockedKeys(ctx context.Context, db DB, bizID string, limit int) ([]store.BlockedKey, error) {
	limit = max(1, min(limit, 1000))
	w := &where[T]{d: d}
	bizCond := ""
	if bizID != "" {
		bizCond = " AND h.biz_id = " + w.next(bizID)
	}
	q := `SELECT ` + d.ListColumns() + ` FROM eventcenter_messages WHERE id IN (
		SELECT h.id FROM eventcenter_messages h
		WHERE ` + HoldsOrder("h.") + ` AND (h.send_status = ` + SendDead + ` OR h.send_attempts > 0)` + bizCond + `
		AND NOT EXISTS (SELECT 1 FROM eventcenter_messages p WHERE ` + sameQueue("p", "h") + ` AND ` + HoldsOrder("p.") + `
			AND p.order_seq < h.order_seq))
		ORDER BY decided_at, id LIMIT ` + w.next(limit)
	rows, err := db.Query(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("blocked keys: %w", d.translate(err))
	}
	heads, err := d.collectSummaries(rows)
	if err != nil {
		return nil, fmt.Errorf("blocked keys: %w", d.translate(err))
	}
	out := make([]store.BlockedKey, len(heads))
	for i, h := range heads {
		out[i] = store.BlockedKey{OrderRef: store.OrderOf(&h.Message), Head: h, Since: h.DecidedAt}
		cw := &where[T]{d: d}
		cq := `SELECT count(*) FROM eventcenter_messages WHERE biz_id = ` + cw.next(h.BizID) + ` AND order_key = ` + cw.next(h.OrderKey) +
			` AND target = ` + cw.next(h.Target) + ` AND topic = ` + cw.next(h.Topic) + ` AND ` + HoldsOrder("") +
			` AND order_seq > ` + cw.next(h.OrderSeq)
		if err := db.QueryRow(ctx, cq, cw.args...).Scan(&out[i].Waiting); err != nil {
			return nil, fmt.Errorf("blocked keys: count behind %s: %w", h.MessageID(), d.translate(err))
		}
	}
	return out, nil
}

// BlockedKeys implements store.Orderer.
func (r Reads[T]) BlockedKeys(ctx context.Context, bizID string, limit int) ([]store.BlockedKey, error) {
	return r.d.BlockedKeys(ctx, r.db, bizID, limit)
}

// WakeSQL returns the statement that wakes the heads of the queues of n
// messages that stopped holding their key (sent, released, closed): the
// lowest-sequenced holder of each queue, if it is pending, has not been
// tried yet and waits (parked by Apply: Folded.DropHeld), becomes due at
// the first parameter; a head under a send lease (lease_token set: being
// sent) is left alone. The ids are the parameters 2 to n+1, and the
// parameter n+2 is the same time again. The ids are read through a
// derived table, so MySQL accepts the statement's own table in it.
func WakeSQL(p func(int) string, n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = p(i + 2)
	}
	return wakeSQL(p(1), `s.id IN (`+strings.Join(ids, ", ")+`)`, p(n+2))
}

// WakeArraySQL is WakeSQL with the ids as one PostgreSQL array: $1 now,
// $2 the ids (bigint[]), $3 now. One statement text whatever the number
// of ids, so it is prepared once; WakeSQL has a text, a preparation and a
// plan per count of ids (up to a batch's hundreds of parameters), which
// made the wake after a batch's commit cost 70 ms in ectools bench.
// The heads are looked up by id only (id = ANY(ARRAY(...))), as the
// claims do, so that no plan joins them with a scan of the table.
var WakeArraySQL = `UPDATE eventcenter_messages SET send_next_at = $1 WHERE id = ANY(ARRAY(
		SELECT DISTINCT ` + HeadOf("s") + ` FROM eventcenter_messages s WHERE s.id = ANY($2::bigint[]) AND s.order_key <> ''))
		AND send_status = ` + SendPending + ` AND send_attempts = 0 AND lease_token = 0 AND send_next_at > $3`

func wakeSQL(now, ids, now2 string) string {
	return `UPDATE eventcenter_messages SET send_next_at = ` + now + ` WHERE id IN (SELECT id FROM (
		SELECT DISTINCT ` + HeadOf("s") + ` AS id
		FROM eventcenter_messages s WHERE ` + ids + ` AND s.order_key <> '') AS w)
		AND send_status = ` + SendPending + ` AND send_attempts = 0 AND lease_token = 0 AND send_next_at > ` + now2
}

// WakeArgs returns the parameters of WakeSQL: now, ids, now.
func WakeArgs(now any, ids []int64) []any {
	args := make([]any, 0, len(ids)+2)
	args = append(args, now)
	for _, id := range ids {
		args = append(args, id)
	}
	return append(args, now)
}

// freed returns the ids of the batch's rows (as written: new rows have
// their ids) that held their order key before it and no longer do, or
// were sent inline by it while it parked later messages of their key (no
// other batch can have parked one behind a message sent inline: it was
// free, and later ones are sequenced after this batch committed): their
// queues' next messages are woken.
func freed(loaded map[store.MessageRef]*state.Message, f *store.Folded, parked map[store.OrderRef]bool) []int64 {
	var ids []int64
	for _, m := range f.Updates {
		if old := loaded[store.MessageRef{BizID: m.BizID, Key: m.Key}]; old != nil && old.HoldsOrder() && !m.HoldsOrder() {
			ids = append(ids, m.ID)
		}
	}
	for _, m := range f.Forwarded {
		if m.OrderSeq > 0 && parked[store.OrderOf(m)] && !slices.Contains(ids, m.ID) {
			ids = append(ids, m.ID)
		}
	}
	// A message this batch parked behind a head that another transaction
	// marked sent meanwhile (after this batch read the holders, before it
	// committed) missed that wake: the wake after the commit looks again.
	// It moves only an unleased, parked head (WakeSQL), never one being sent.
	for _, rows := range [][]*state.Message{f.Inserts, f.Updates} {
		for _, m := range rows {
			if m.OrderSeq > 0 && parked[store.OrderOf(m)] && m.ID != 0 && !slices.Contains(ids, m.ID) {
				ids = append(ids, m.ID)
			}
		}
	}
	return ids
}
