package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

// Writing ordered messages ahead (store.ApplyRequest.WriteAhead, migration
// 0009): an ordered message made sendable by a control record is inserted
// SENT, with that record's offset (sent_ahead_offset), in the transaction
// that sequences it; it is sent after the commit, and the batch then
// raises its partitions' rows of eventcenter_sent_watermarks, which
// confirms it. Its key's next message waits until its predecessor's
// record is at or below the watermark (predConfirmed), and a replay of
// the record writes an unconfirmed message back to pending
// (sqlcore.AheadTx).

// columns are codec.Columns and this store's sent-ahead columns (scanAhead
// reads them; aheadColumns writes them).
const columns = codec.Columns + ", sent_ahead_offset, order_pred_partition, order_pred_offset"

// aheadScan reads the sent-ahead columns (sqlcore.Dialect.Extra).
type aheadScan struct {
	off, predOff pgtype.Int8
	predPart     pgtype.Int4
	dest         [3]any
}

func newAheadScan() sqlcore.ExtraScan {
	a := &aheadScan{}
	a.dest = [3]any{&a.off, &a.predPart, &a.predOff}
	return a
}

func (a *aheadScan) Dest() []any { return a.dest[:] }

func (a *aheadScan) Set(m *state.Message) {
	m.SentAhead, m.OrderPred = state.ControlPos{}, state.ControlPos{}
	if a.off.Valid {
		m.SentAhead = state.ControlPos{Partition: m.Partition, Offset: a.off.Int64, Valid: true}
	}
	if a.predPart.Valid && a.predOff.Valid {
		m.OrderPred = state.ControlPos{Partition: a.predPart.Int32, Offset: a.predOff.Int64, Valid: true}
	}
}

// aheadColumns are the sent-ahead columns of a multi-row write (-1 for
// NULL).
func aheadColumns(ms []*state.Message) []col {
	cols := []col{
		column(ms, "sent_ahead_offset", "bigint", func(m *state.Message) int64 { return offsetOrNone(m.SentAhead) }, eqv),
		column(ms, "order_pred_partition", "int", func(m *state.Message) int32 {
			if !m.OrderPred.Valid {
				return -1
			}
			return m.OrderPred.Partition
		}, eqv),
		column(ms, "order_pred_offset", "bigint", func(m *state.Message) int64 { return offsetOrNone(m.OrderPred) }, eqv),
	}
	for i := range cols {
		cols[i].minusOneIsNull = true
	}
	return cols
}

// offsetOrNone is p's offset, or -1 (NULL) when p is no place.
func offsetOrNone(p state.ControlPos) int64 {
	if !p.Valid {
		return -1
	}
	return p.Offset
}

// predConfirmed is "the predecessor of the row of alias a was not written
// ahead, or its send is confirmed": its control record is at or below its
// partition's sent watermark. The claims of ordered sends add it to
// sqlcore.OrderFree.
func predConfirmed(a string) string {
	return `(` + a + `.order_pred_offset IS NULL OR ` + a + `.order_pred_offset <= coalesce((SELECT w.sent_offset
		FROM eventcenter_sent_watermarks w WHERE w.partition = ` + a + `.order_pred_partition), -1))`
}

// orderFree is sqlcore.OrderFree with predConfirmed.
func orderFree(a string) string {
	return sqlcore.OrderFree(a) + ` AND ` + predConfirmed(a)
}

const watermarksSQL = `SELECT partition, sent_offset FROM eventcenter_sent_watermarks`

// LoadAhead implements sqlcore.AheadTx: BEGIN, the rows and the
// watermarks (a row per control partition) in one round trip.
func (t *pgTx) LoadAhead(ctx context.Context, refs []store.MessageRef) (map[store.MessageRef]*state.Message, map[int32]int64, error) {
	var b pgx.Batch
	queueLoad(&b, refs)
	b.Queue(watermarksSQL)
	t.begun = true
	br := t.conn.SendBatch(ctx, &b)
	loaded, err := readLoad(br)
	var wm map[int32]int64
	if err == nil {
		wm, err = readWatermarks(br)
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return loaded, wm, err
}

func readWatermarks(br pgx.BatchResults) (map[int32]int64, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("read sent watermarks: %w", err)
	}
	defer rows.Close()
	wm := map[int32]int64{}
	for rows.Next() {
		var p int32
		var o int64
		if err := rows.Scan(&p, &o); err != nil {
			return nil, fmt.Errorf("read sent watermarks: %w", err)
		}
		wm[p] = o
	}
	return wm, rows.Err()
}

// assignSeqsAheadSQL is assignSeqsSQL that also moves each counter's
// control record (last_*, NULL when none) to prev_* and sets the new one
// ($6 and $7, -1 for none), and returns the previous: in an ON CONFLICT
// update every expression reads the row as it was.
const assignSeqsAheadSQL = `INSERT INTO eventcenter_order_keys (biz_id, order_key, target, topic, last_seq, last_partition, last_offset)
		SELECT b, k, t, p, n, nullif(lp, -1), nullif(lo, -1)
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::int[], $7::bigint[])
			WITH ORDINALITY AS u(b, k, t, p, n, lp, lo, o)
		ORDER BY o
		ON CONFLICT (biz_id, order_key, target, topic) DO UPDATE SET last_seq = eventcenter_order_keys.last_seq + excluded.last_seq,
			prev_partition = eventcenter_order_keys.last_partition, prev_offset = eventcenter_order_keys.last_offset,
			last_partition = excluded.last_partition, last_offset = excluded.last_offset
		RETURNING biz_id, order_key, target, topic, last_seq, coalesce(prev_partition, -1), coalesce(prev_offset, -1)`

// AssignSeqsAhead implements sqlcore.AheadTx: the counters and the
// holders in one pipelined round trip (countHolders, as AssignSeqsHolders).
func (t *pgTx) AssignSeqsAhead(ctx context.Context, need []*state.Message, last map[store.OrderRef]state.ControlPos,
	refs []store.OrderRef, exclude []int64) (map[store.OrderRef]int64, map[store.OrderRef]state.ControlPos, error) {
	count := map[store.OrderRef]int64{}
	lastSeq := map[store.OrderRef]int64{}
	prev := map[store.OrderRef]state.ControlPos{}
	var stmt *countStmt
	if len(need) > 0 {
		for _, m := range need {
			count[store.OrderOf(m)]++
		}
		qs := sqlcore.Queues(need)
		bizs, keys, targets, topics := queueArrays(qs)
		ns, lps, los := make([]int64, len(qs)), make([]int32, len(qs)), make([]int64, len(qs))
		for i, q := range qs {
			ns[i], lps[i], los[i] = count[q], -1, -1
			if p := last[q]; p.Valid {
				lps[i], los[i] = p.Partition, p.Offset
			}
		}
		lastSeq = make(map[store.OrderRef]int64, len(qs))
		stmt = &countStmt{sql: assignSeqsAheadSQL, args: []any{bizs, keys, targets, topics, ns, lps, los},
			read: func(rows pgx.Rows) error { return readCounters(rows, lastSeq, prev) }}
	}
	low, err := t.countHolders(ctx, stmt, refs, exclude)
	if err != nil {
		return nil, nil, err
	}
	if len(need) > 0 {
		if err := sqlcore.Number(need, count, lastSeq); err != nil {
			return nil, nil, err
		}
	}
	return low, prev, nil
}

func readCounters(rows pgx.Rows, last map[store.OrderRef]int64, prev map[store.OrderRef]state.ControlPos) error {
	defer rows.Close()
	for rows.Next() {
		var r store.OrderRef
		var n, po int64
		var pp int32
		if err := rows.Scan(&r.BizID, &r.OrderKey, &r.Target, &r.Topic, &n, &pp, &po); err != nil {
			return err
		}
		last[r] = n
		if pp >= 0 && po >= 0 {
			prev[r] = state.ControlPos{Partition: pp, Offset: po, Valid: true}
		}
	}
	return rows.Err()
}

// writeBackSQL writes messages written ahead and not sent back to pending
// ($1 ids, $2 due times, $3 lease tokens, $4 now), if they still are sent
// ahead (a replay of their records on another center may have written
// them back already).
var writeBackSQL = `UPDATE eventcenter_messages AS m SET send_status = ` + sqlcore.SendPending + `, sent_at = NULL, send_ref = '',
		sent_ahead_offset = NULL, send_next_at = u.due, lease_token = u.token, updated_at = $4
	FROM unnest($1::bigint[], $2::timestamptz[], $3::bigint[]) AS u(id, due, token)
	WHERE m.id = u.id AND m.sent_ahead_offset IS NOT NULL AND m.send_status = ` + sqlcore.SendSent

// raiseWatermarksSQL raises the sent watermarks of partitions $1 to
// offsets $2, never lowering one.
const raiseWatermarksSQL = `INSERT INTO eventcenter_sent_watermarks (partition, sent_offset)
		SELECT * FROM unnest($1::int[], $2::bigint[]) ORDER BY 1
		ON CONFLICT (partition) DO UPDATE SET sent_offset = greatest(eventcenter_sent_watermarks.sent_offset, excluded.sent_offset)`

// Confirm implements sqlcore.AheadDriver: the writes back and the
// watermarks in one transaction (one round trip), then the wake.
func (r txRunner) Confirm(ctx context.Context, back []*state.Message, marks map[int32]int64, sent []int64, now time.Time) (int, error) {
	var b pgx.Batch
	b.Queue("BEGIN")
	if len(back) > 0 {
		ids, dues, tokens := make([]int64, len(back)), make([]pgtype.Timestamptz, len(back)), make([]int64, len(back))
		for i, m := range back {
			ids[i], dues[i], tokens[i] = m.ID, ts(m.SendNextAt), m.LeaseToken
		}
		b.Queue(writeBackSQL, ids, dues, tokens, now)
	}
	if len(marks) > 0 {
		parts, offs := make([]int32, 0, len(marks)), make([]int64, 0, len(marks))
		for p, o := range marks {
			parts, offs = append(parts, p), append(offs, o)
		}
		b.Queue(raiseWatermarksSQL, parts, offs)
	}
	b.Queue("COMMIT")
	br := r.pool.SendBatch(ctx, &b)
	err := func() error {
		for range b.Len() - 1 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return checkCommit(br.Exec())
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	if len(sent) == 0 {
		return 0, nil
	}
	tag, err := r.pool.Exec(ctx, sqlcore.WakeArraySQL, now, sent, now)
	if err != nil {
		// The next messages are due after their park anyway.
		return 0, nil
	}
	return int(tag.RowsAffected()), nil
}
