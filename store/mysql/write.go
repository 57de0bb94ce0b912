package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

// inTx runs fn in a transaction and commits it.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return sqlcore.InTx(ctx, s.db, fn)
}

// ---- Apply ----

// txRunner runs the core's transactions.
type txRunner struct{ s *Store }

func (r txRunner) InTx(ctx context.Context, fn func(tx sqlcore.Tx) error) error {
	return r.s.inTx(ctx, func(tx *sql.Tx) error { return fn(myTx{r.s, tx}) })
}

// myTx is one transaction of txRunner.
type myTx struct {
	s  *Store
	tx *sql.Tx
}

// Load reads and locks the rows of refs that exist.
func (t myTx) Load(ctx context.Context, refs []store.MessageRef) (map[store.MessageRef]*state.Message, error) {
	loaded := make(map[store.MessageRef]*state.Message, len(refs))
	for lo := 0; lo < len(refs); lo += maxRows {
		where, args := byKeys(refs[lo:min(lo+maxRows, len(refs))])
		ms, err := dialect.Load(ctx, sqlcore.SQLDB(t.tx), `SELECT `+columns+` FROM eventcenter_messages WHERE `+where+` FOR UPDATE`, args...)
		if err != nil {
			return nil, err
		}
		maps.Copy(loaded, ms)
	}
	return loaded, nil
}

// LoadRetryNow implements sqlcore.Tx.
func (t myTx) LoadRetryNow(ctx context.Context, bizID string, after int64, limit int) ([]state.Message, error) {
	return dialect.LoadRetryNow(ctx, sqlcore.SQLDB(t.tx), bizID, after, limit)
}

// orderSQL is MySQL's dialect of the ordering steps.
var orderSQL = sqlcore.OrderSQL{Param: sqlcore.QuestionParam, Upsert: sqlcore.MySQLUpsert}

// AssignSeqs implements sqlcore.Tx. The counters are read back after the
// upsert: a transaction reads its own writes (and the sessions run READ
// COMMITTED).
func (t myTx) AssignSeqs(ctx context.Context, need []*state.Message) error {
	return sqlcore.SQLOrder{DB: sqlcore.SQLDB(t.tx), SQL: orderSQL}.AssignSeqs(ctx, need)
}

// Holders implements sqlcore.Tx: a plain read, which under READ COMMITTED
// sees what committed before it.
func (t myTx) Holders(ctx context.Context, refs []store.OrderRef, exclude []int64) (map[store.OrderRef]int64, error) {
	return sqlcore.SQLOrder{DB: sqlcore.SQLDB(t.tx), SQL: orderSQL}.Holders(ctx, refs, exclude)
}

// Wake implements sqlcore.Tx.
func (t myTx) Wake(ctx context.Context, ids []int64, now time.Time) (int, error) {
	res, err := t.tx.ExecContext(ctx, sqlcore.WakeSQL(sqlcore.QuestionParam, len(ids)), sqlcore.WakeArgs(now, ids)...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Write implements sqlcore.Tx.
func (t myTx) Write(ctx context.Context, loaded map[store.MessageRef]*state.Message, f *store.Folded) error {
	if t.s.beforeWrite != nil && len(f.Inserts) > 0 {
		t.s.beforeWrite()
	}
	return writeFolded(ctx, t.tx, loaded, f)
}

// maxRows bounds the rows of one multi-row statement; maxBytes its
// estimated size (the server refuses statements over max_allowed_packet,
// 16 MiB by default on MariaDB, 64 MiB on MySQL 8).
const (
	maxRows  = 1000
	maxBytes = 4 << 20
)

// rowBytes estimates a message's share of an interpolated statement.
func rowBytes(m *state.Message) int {
	n := 400 + len(m.BizID) + len(m.Key) + len(m.Target) + len(m.Topic) + len(m.ForwardKey) + len(m.Tag) + len(m.Verify) + len(m.LastError)
	n += 2 * len(m.Payload) // escaped: at most twice the bytes
	for _, h := range m.Headers {
		n += 2 * (len(h.Key) + len(h.Value) + 4)
	}
	return n
}

// batches cuts ms into runs of at most maxRows rows and maxBytes bytes
// (at least one row each).
func batches(ms []*state.Message) [][]*state.Message {
	var out [][]*state.Message
	lo, size := 0, 0
	for i, m := range ms {
		b := rowBytes(m)
		if i > lo && (i-lo >= maxRows || size+b > maxBytes) {
			out = append(out, ms[lo:i])
			lo, size = i, 0
		}
		size += b
	}
	if lo < len(ms) {
		out = append(out, ms[lo:])
	}
	return out
}

const insertColumns = "biz_id, message_key, `partition`, status, has_body, payload, headers, target, topic, forward_key, tag, verify, " +
	"verify_attempts, verify_next_at, send_status, send_attempts, send_next_at, send_ref, lease_token, last_error, conflicts, " +
	"created_at, updated_at, decided_at, sent_at, order_key, order_seq, deliver_at"

const nInsertColumns = 28

func insertArgs(args []any, m *state.Message) []any {
	return append(args, m.BizID, m.Key, m.Partition, int16(m.Status), m.HasBody, codec.PayloadArg(m), codec.HeadersArg(m),
		m.Target, m.Topic, m.ForwardKey, m.Tag, m.Verify, m.VerifyAttempts, dt(m.VerifyNextAt),
		int16(m.SendStatus), m.SendAttempts, dt(m.SendNextAt), m.SendRef, m.LeaseToken, m.LastError, m.Conflicts,
		dt(m.CreatedAt), dt(m.UpdatedAt), dt(m.DecidedAt), dt(m.SentAt), m.OrderKey, m.OrderSeq, dt(m.DeliverAt))
}

const updateBodySQL = `UPDATE eventcenter_messages SET has_body = TRUE, payload = ?, headers = ?, target = ?, topic = ?,
	forward_key = ?, tag = ?, verify = ?, order_key = ?, deliver_at = ? WHERE id = ?`

// writeFolded writes a Fold result: multi-row INSERTs (a duplicate key is
// a concurrent insert: sqlcore.ErrInsertRace), then the new rows' ids, multi-row
// UPDATEs, the bodies that arrived after their decision, and the audit
// rows.
func writeFolded(ctx context.Context, tx *sql.Tx, loaded map[store.MessageRef]*state.Message, f *store.Folded) error {
	for _, ms := range batches(f.Inserts) {
		args := make([]any, 0, nInsertColumns*len(ms))
		for _, m := range ms {
			args = insertArgs(args, m)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO eventcenter_messages (`+insertColumns+`) VALUES `+
			sqlcore.Values(len(ms), nInsertColumns), args...)
		var myErr *gomysql.MySQLError
		if errors.As(err, &myErr) && myErr.Number == errDupEntry {
			return fmt.Errorf("insert messages: %w (%w)", sqlcore.ErrInsertRace, err)
		}
		if err != nil {
			return fmt.Errorf("insert messages: %w", err)
		}
		if err := readIDs(ctx, tx, ms); err != nil {
			return fmt.Errorf("insert messages: %w", err)
		}
	}
	var bodies []*state.Message
	if len(f.Updates) > 0 {
		for _, m := range f.Updates {
			if old := loaded[store.MessageRef{BizID: m.BizID, Key: m.Key}]; m.HasBody && (old == nil || !old.HasBody) {
				bodies = append(bodies, m)
			}
		}
		for lo := 0; lo < len(f.Updates); lo += maxRows {
			ms := f.Updates[lo:min(lo+maxRows, len(f.Updates))]
			q, args := updateSQL(ms)
			r, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return fmt.Errorf("update messages: %w", err)
			}
			if n, err := r.RowsAffected(); err != nil || n != int64(len(ms)) {
				return fmt.Errorf("update messages: %d of %d rows updated (%v)", n, len(ms), err)
			}
		}
	}
	for _, m := range bodies {
		if _, err := tx.ExecContext(ctx, updateBodySQL, codec.PayloadArg(m), codec.HeadersArg(m), m.Target, m.Topic, m.ForwardKey,
			m.Tag, m.Verify, m.OrderKey, dt(m.DeliverAt), m.ID); err != nil {
			return fmt.Errorf("update message %s: %w", m.MessageID(), err)
		}
	}
	for lo := 0; lo < len(f.Audits); lo += maxRows {
		q, args := insertAudit(f.Audits[lo:min(lo+maxRows, len(f.Audits))])
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("insert audit: %w", err)
		}
	}
	return nil
}

// readIDs sets the ids of rows just inserted (MySQL has no RETURNING, and
// the ids of a multi-row INSERT are consecutive only in some lock modes).
func readIDs(ctx context.Context, tx *sql.Tx, ms []*state.Message) error {
	refs := make([]store.MessageRef, len(ms))
	for i, m := range ms {
		refs[i] = store.MessageRef{BizID: m.BizID, Key: m.Key}
	}
	where, args := byKeys(refs)
	rows, err := sqlcore.SQLDB(tx).Query(ctx, `SELECT id, biz_id, message_key FROM eventcenter_messages WHERE `+where, args...)
	if err != nil {
		return err
	}
	n, err := sqlcore.SetIDs(rows, sqlcore.ByRef(ms))
	if err != nil {
		return err
	}
	if n != len(ms) {
		return fmt.Errorf("read ids: %d of %d inserted rows found", n, len(ms))
	}
	return nil
}

// updateCol is one column of a multi-row UPDATE.
type updateCol struct {
	name string
	get  func(m *state.Message) any
}

var updateCols = []updateCol{
	{"status", func(m *state.Message) any { return int16(m.Status) }},
	{"verify_attempts", func(m *state.Message) any { return m.VerifyAttempts }},
	{"verify_next_at", func(m *state.Message) any { return dt(m.VerifyNextAt) }},
	{"send_status", func(m *state.Message) any { return int16(m.SendStatus) }},
	{"send_attempts", func(m *state.Message) any { return m.SendAttempts }},
	{"send_next_at", func(m *state.Message) any { return dt(m.SendNextAt) }},
	{"send_ref", func(m *state.Message) any { return m.SendRef }},
	{"lease_token", func(m *state.Message) any { return m.LeaseToken }},
	{"last_error", func(m *state.Message) any { return m.LastError }},
	{"conflicts", func(m *state.Message) any { return m.Conflicts }},
	{"updated_at", func(m *state.Message) any { return dt(m.UpdatedAt) }},
	{"decided_at", func(m *state.Message) any { return dt(m.DecidedAt) }},
	{"sent_at", func(m *state.Message) any { return dt(m.SentAt) }},
	{"order_seq", func(m *state.Message) any { return m.OrderSeq }},
}

func sameArg(a, b any) bool {
	if ta, ok := a.(time.Time); ok {
		tb, ok := b.(time.Time)
		return ok && ta.Equal(tb)
	}
	return a == b
}

// updateSQL returns the UPDATE of ms: a join with the rows' ids and the
// columns that differ between rows, sent as one JSON document read by
// JSON_TABLE, and the columns equal in the whole batch (most of them: a
// timestamp, a status) set once.
//
// Measured on MariaDB 10.11 (1,000 rows, one varying column besides the
// id, 40 rounds, 3 runs, load average 12): a temporary table filled by a
// multi-row INSERT 6.8-9.5 ms, JSON_TABLE 7.7-10.2 ms, CASE id WHEN ...
// 9.8-11.3 ms, a derived table of SELECT ... UNION ALL 14.8-18.5 ms, INSERT
// ... ON DUPLICATE KEY UPDATE of whole rows 20.8-27.4 ms. JSON_TABLE is
// one statement with no session state (a temporary table inside a
// transaction is refused under GTID consistency).
func updateSQL(ms []*state.Message) (string, []any) {
	var vary, same []updateCol
	for _, c := range updateCols {
		v0 := c.get(ms[0])
		eq := true
		for _, m := range ms[1:] {
			if !sameArg(v0, c.get(m)) {
				eq = false
				break
			}
		}
		if eq {
			same = append(same, c)
		} else {
			vary = append(vary, c)
		}
	}
	rows := make([]map[string]any, len(ms))
	for i, m := range ms {
		row := map[string]any{"id": m.ID}
		for _, c := range vary {
			if v := jsonValue(c.get(m)); v != nil {
				row[c.name] = v
			}
		}
		rows[i] = row
	}
	cols := []string{"id BIGINT PATH '$.id'"}
	var set []string
	for _, c := range vary {
		typ, expr := jsonColumn(c.get(ms[0]), "u."+c.name)
		cols = append(cols, c.name+" "+typ+" PATH '$."+c.name+"'")
		set = append(set, "m."+c.name+" = "+expr)
	}
	args := []any{mustJSON(rows)}
	for _, c := range same {
		set = append(set, "m."+c.name+" = ?")
		args = append(args, c.get(ms[0]))
	}
	return `UPDATE eventcenter_messages AS m JOIN JSON_TABLE(?, '$[*]' COLUMNS (` + strings.Join(cols, ", ") + `)) AS u
		ON m.id = u.id SET ` + strings.Join(set, ", "), args
}

// jsonTime is the DATETIME(6) text of a time in a JSON_TABLE document.
const jsonTime = "2006-01-02 15:04:05.999999"

// jsonValue is v (an update column's driver value) in a JSON_TABLE
// document: strings base64 (any bytes survive), times as DATETIME text,
// NULL left out (the column's default: NULL ON EMPTY).
func jsonValue(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return base64.StdEncoding.EncodeToString([]byte(x))
	case time.Time:
		return x.Format(jsonTime)
	}
	return v
}

// jsonColumn returns the JSON_TABLE type of a column whose values are like
// v, and the expression reading it (strings are decoded). Time columns may
// hold NULL (dt of a zero time): their type does not depend on v.
func jsonColumn(v any, col string) (typ, expr string) {
	switch v.(type) {
	case string:
		return "TEXT", "FROM_BASE64(" + col + ")"
	case int16, int32, int64, int:
		return "BIGINT", col
	}
	return "DATETIME(6)", col
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("mysql store: encode JSON_TABLE rows: %v", err)) // only maps of ints and strings
	}
	return string(b)
}

// ---- claims and sends ----

// Each claim reads every partition on its own: "partition = ? AND due <= ?
// ORDER BY due LIMIT n FOR UPDATE SKIP LOCKED" walks the index in order and
// locks only the rows it returns, where a single query over a partition
// list would sort, and lock, every due row first.
const (
	claimSendsSQL = `SELECT ` + "%s" + ` FROM eventcenter_messages
		WHERE ` + "`partition`" + ` = ? AND send_due_at <= ? ORDER BY send_due_at LIMIT ? FOR UPDATE SKIP LOCKED`
	// claimOrderedSendsSQL skips the messages held back by their order key
	// (Claim.Ordered). The rows its subquery reads are not locked (a
	// locking clause covers the outer table only) and are read as
	// committed: a holder another transaction has locked counts as it was
	// last committed, never skipped.
	claimOrderedSendsSQL = `SELECT ` + "%s" + ` FROM eventcenter_messages
		WHERE ` + "`partition`" + ` = ? AND send_due_at <= ? AND %s ORDER BY send_due_at LIMIT ? FOR UPDATE SKIP LOCKED`
	claimCheckbacksSQL = `SELECT ` + "%s" + ` FROM eventcenter_messages
		WHERE ` + "`partition`" + ` = ? AND verify_due_at <= ? ORDER BY verify_due_at LIMIT ? FOR UPDATE SKIP LOCKED`
)

// ClaimSends implements store.Store.
func (s *Store) ClaimSends(ctx context.Context, c store.Claim) ([]state.Message, error) {
	var ms []state.Message
	var err error
	switch {
	case c.FairSends != nil:
		ms, err = s.claimFair(ctx, c)
	case c.Ordered:
		ms, err = s.claim(ctx, "claim sends", c, fmt.Sprintf(claimOrderedSendsSQL, columns, sqlcore.OrderFree("eventcenter_messages")), false)
	default:
		return s.claim(ctx, "claim sends", c, fmt.Sprintf(claimSendsSQL, columns), false)
	}
	if err != nil {
		return nil, err
	}
	return s.claimRuns(ctx, ms, c), nil
}

// claimRuns leases the runs behind the heads a claim leased
// (store.Claim.Run), in a transaction of its own. The heads are leased
// already: should that fail, they are returned without their runs (whose
// messages the key's next claims take).
func (s *Store) claimRuns(ctx context.Context, heads []state.Message, c store.Claim) []state.Message {
	if !c.Ordered || c.Run <= 1 || !slices.ContainsFunc(heads, func(m state.Message) bool { return store.RunHead(&m) }) {
		return heads
	}
	var out []state.Message
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = dialect.ClaimRuns(ctx, sqlcore.SQLDB(tx), heads, c, codec.Time(s.now()))
		return err
	})
	if err != nil {
		s.log.Warn("lease the runs behind claimed order keys failed; sending their heads alone", "err", translate(err))
		return heads
	}
	return out
}

// ClaimCheckbacks implements store.Store. It counts the attempt each claim
// is for (state.ClaimCheckback): a call whose center dies before its
// answer is written still counts.
func (s *Store) ClaimCheckbacks(ctx context.Context, c store.Claim) ([]state.Message, error) {
	return s.claim(ctx, "claim checkbacks", c, fmt.Sprintf(claimCheckbacksSQL, columns), true)
}

func (s *Store) claim(ctx context.Context, what string, c store.Claim, q string, checkback bool) ([]state.Message, error) {
	return sqlcore.Claim(c, func() ([]state.Message, error) { return s.claimRetry(ctx, what, c, q, checkback) })
}

func (s *Store) claimRetry(ctx context.Context, what string, c store.Claim, q string, checkback bool) ([]state.Message, error) {
	// Two claimers can still deadlock on the secondary index entries their
	// updates move (InnoDB 1213), although SKIP LOCKED keeps them off each
	// other's rows; the claim is rolled back whole, so it is tried again
	// like Apply.
	for attempt := 1; ; attempt++ {
		ms, err := s.claimOnce(ctx, c, q, checkback)
		if err == nil {
			return ms, nil
		}
		if !retryable(err) || attempt >= s.tries || ctx.Err() != nil {
			return nil, fmt.Errorf("%s (try %d): %w", what, attempt, translate(err))
		}
		s.log.Debug("retrying store claim", "what", what, "try", attempt, "err", err)
	}
}

func (s *Store) claimOnce(ctx context.Context, c store.Claim, q string, checkback bool) ([]state.Message, error) {
	now := codec.Time(s.now())
	until, token := now.Add(c.Lease), codec.LeaseToken()
	var ms []state.Message
	if err := s.inTx(ctx, func(tx *sql.Tx) error {
		ms = ms[:0]
		if checkback && c.FairCheckbacks != nil {
			got, err := ckCandidates(ctx, tx, c, now)
			if err != nil {
				return err
			}
			ms = append(ms, got...)
		} else {
			for _, p := range c.Partitions {
				got, err := dialect.Messages(ctx, sqlcore.SQLDB(tx), q, p, now, c.Limit)
				if err != nil {
					return err
				}
				ms = append(ms, got...)
			}
		}
		if len(ms) == 0 {
			return nil
		}
		due := func(m *state.Message) time.Time {
			if checkback {
				return m.VerifyNextAt
			}
			return m.SendNextAt
		}
		slices.SortFunc(ms, func(a, b state.Message) int {
			if c := due(&a).Compare(due(&b)); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		if checkback && c.FairCheckbacks != nil {
			ms = store.Pick(c.FairCheckbacks, c.Limit, ms, store.BizIDOf)
		}
		ms = ms[:min(len(ms), c.Limit)]
		ids := make([]any, len(ms))
		for i := range ms {
			ids[i] = ms[i].ID
			ms[i].LeaseToken = token
			if checkback {
				ms[i].VerifyNextAt = until
				ms[i].VerifyAttempts++
			} else {
				ms[i].SendNextAt = until
			}
		}
		set := "send_next_at = ?, lease_token = ?"
		if checkback {
			set = "verify_next_at = ?, lease_token = ?, verify_attempts = verify_attempts + 1"
		}
		in := sqlcore.List(len(ids))
		_, err := tx.ExecContext(ctx, `UPDATE eventcenter_messages SET `+set+` WHERE id IN (`+in+`)`,
			append([]any{until, token}, ids...)...)
		return err
	}); err != nil {
		return nil, err
	}
	return ms, nil
}

// MarkSent implements store.Store.
func (s *Store) MarkSent(ctx context.Context, sent []store.Sent) error {
	if len(sent) == 0 {
		return nil
	}
	now := codec.Time(s.now())
	for lo := 0; lo < len(sent); lo += maxRows {
		q, args := markSentSQL(sent[lo:min(lo+maxRows, len(sent))], now)
		if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("mark sent: %w", translate(err))
		}
	}
	var ids []int64
	for _, x := range sent {
		if x.Ordered {
			ids = append(ids, x.ID)
		}
	}
	if len(ids) > 0 {
		if _, err := s.db.ExecContext(ctx, sqlcore.WakeSQL(sqlcore.QuestionParam, len(ids)), sqlcore.WakeArgs(now, ids)...); err != nil {
			return fmt.Errorf("mark sent: wake the next messages of %d order keys: %w", len(ids), translate(err))
		}
	}
	return nil
}

// markSentSQL updates the rows by id; refs equal in the whole batch are
// set once, else joined from JSON_TABLE (see updateSQL).
func markSentSQL(sent []store.Sent, now time.Time) (string, []any) {
	same := true
	for _, x := range sent[1:] {
		if x.Ref != sent[0].Ref {
			same = false
			break
		}
	}
	cond := ` AND m.` + strings.ReplaceAll(sqlcore.PendingSend("has_body"), " AND ", " AND m.")
	if same {
		args := []any{now, now, sent[0].Ref}
		for _, x := range sent {
			args = append(args, x.ID)
		}
		return `UPDATE eventcenter_messages AS m SET ` + sqlcore.MarkSentSet(mcol, "?", "?") + `
			WHERE m.id IN (` + sqlcore.List(len(sent)) + `)` + cond, args
	}
	rows := make([]map[string]any, len(sent))
	for i, x := range sent {
		rows[i] = map[string]any{"id": x.ID, "ref": base64.StdEncoding.EncodeToString([]byte(x.Ref))}
	}
	return `UPDATE eventcenter_messages AS m JOIN JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$.id', ref TEXT PATH '$.ref')) AS u
		ON m.id = u.id SET ` + sqlcore.MarkSentSet(mcol, "?", "FROM_BASE64(u.ref)") + `
		WHERE TRUE` + cond, []any{mustJSON(rows), now, now}
}

// mcol qualifies a column with the updated table's alias.
func mcol(c string) string { return "m." + c }

// ---- operator bulk actions and retention ----

// purgeSQL reads the purge index (purge_at: the decision time of a rolled
// back row, the send time of a sent one, NULL for the others) in order and
// locks only what it deletes.
const purgeSQL = `SELECT id, biz_id, message_key FROM eventcenter_messages
	WHERE purge_at < ? LIMIT ? FOR UPDATE SKIP LOCKED`

// Purge implements store.Store.
func (s *Store) Purge(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, errors.New("purge: limit must be positive")
	}
	n := 0
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		ids, err := sqlcore.Select(ctx, sqlcore.SQLDB(tx), purgeSQL, []any{codec.Time(before), limit}, func(r sqlcore.Row) (any, error) {
			var id int64
			var gone store.MessageRef
			err := r.Scan(&id, &gone.BizID, &gone.Key)
			return id, err
		})
		if err != nil {
			return err
		}
		n = len(ids)
		for lo := 0; lo < len(ids); lo += maxRows {
			hi := min(lo+maxRows, len(ids))
			in := sqlcore.List(hi - lo)
			if _, err := tx.ExecContext(ctx, `DELETE FROM eventcenter_messages WHERE id IN (`+in+`)`, ids[lo:hi]...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("purge: %w", translate(err))
	}
	return n, nil
}
