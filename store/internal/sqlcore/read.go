package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
)

// Row is one result row (pgx.Row, pgx.Rows, *sql.Row, *sql.Rows).
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result set; the reader closes it.
type Rows interface {
	Row
	Next() bool
	Err() error
	Close()
}

// DB runs a driver's queries (a pool, a connection or a transaction).
type DB interface {
	Query(ctx context.Context, q string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, q string, args ...any) Row
}

// Dialect is what the read side needs of a driver: its SQL fragments and
// how it reads a nullable time column (into a T).
type Dialect[T any] struct {
	// Param returns the n-th (from 1) statement parameter: "$1" or "?".
	Param func(n int) string
	// Columns are the message columns (codec.Columns, quoted as the
	// dialect needs).
	Columns string
	// PayloadSize is the expression of the payload's size in bytes (0 when
	// there is none): what List selects instead of payload and headers.
	PayloadSize string
	// HasBody is the true test of has_body.
	HasBody string
	// ListOrphan selects orphan COMMITs in List.
	ListOrphan string
	// KeyContains is the test that a parameter (%s) is a substring of
	// message_key (no LIKE: "%" and "_" are plain characters).
	KeyContains string
	// KeyArg converts a key substring to a parameter; nil keeps it.
	KeyArg func(string) any
	// TimeArg converts a time to a parameter.
	TimeArg func(time.Time) any
	// Time reads a scanned time column (zero for NULL).
	Time func(*T) time.Time
	// ForUpdate locks the rows a read selects in a transaction ("" where
	// the transaction locks the database).
	ForUpdate string
	// OldestPreparedSQL selects the bizID and oldest creation time of the
	// PREPARED rows per bizID; OrphanCommitsSQL the bizID, count and
	// oldest creation time of the orphan COMMITs per bizID.
	OldestPreparedSQL, OrphanCommitsSQL string
	// NoRows is the driver's "no rows" error.
	NoRows error
	// Translate turns a driver error into one the callers may see; nil
	// keeps it.
	Translate func(error) error
	// Extra, when set, reads columns of the driver's own that follow the
	// shared ones in Columns (PostgreSQL's sent-ahead state): it returns
	// a scan for them that one query's rows share.
	Extra func() ExtraScan
}

func (d *Dialect[T]) translate(err error) error {
	if d.Translate == nil || err == nil {
		return err
	}
	return d.Translate(err)
}

// ListColumns are the columns List selects: Columns with the payload and
// headers replaced by the payload's size.
func (d *Dialect[T]) ListColumns() string {
	return strings.Replace(d.Columns, "payload, headers", d.PayloadSize, 1)
}

// ScanMessage reads a row of Columns.
func (d *Dialect[T]) ScanMessage(r Row) (state.Message, error) {
	var m state.Message
	err := d.newScanner(true).scan(r, &m, nil)
	return m, err
}

// CollectMessages reads every row of Columns and closes rows. The rows
// share one scanner and are read in place into the slice, so a row costs
// no allocation beyond its own bytes (a claim reads up to a thousand).
// expect, when the caller knows it, is how many rows there will be (a
// claim of chosen ids): the slice is made that size at once rather than
// grown. Leave it 0 where the rows may be far fewer than the most there
// could be.
func (d *Dialect[T]) CollectMessages(rows Rows, expect int) ([]state.Message, error) {
	defer rows.Close()
	sc := d.newScanner(true)
	out := make([]state.Message, 0, expect)
	for rows.Next() {
		out = append(out, state.Message{})
		if err := sc.scan(rows, &out[len(out)-1], nil); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}

// collectSummaries reads every row of ListColumns and closes rows.
func (d *Dialect[T]) collectSummaries(rows Rows) ([]store.Summary, error) {
	defer rows.Close()
	sc := d.newScanner(false)
	var out []store.Summary
	for rows.Next() {
		out = append(out, store.Summary{})
		s := &out[len(out)-1]
		if err := sc.scan(rows, &s.Message, &s.PayloadSize); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}

// ExtraScan reads a driver's own columns of a row (Dialect.Extra).
type ExtraScan interface {
	// Dest is where the scan puts the columns; the same for every row.
	Dest() []any
	// Set sets what the scan read on m.
	Set(m *state.Message)
}

// rowScanner reads rows of Columns (full) or ListColumns one after
// another. The columns that need converting are scanned into its fields,
// so the rows of one query reuse them and one destination slice.
type rowScanner[T any] struct {
	d                              *Dialect[T]
	full                           bool
	extra                          ExtraScan
	headers, lastErr               []byte
	st, sst                        int16
	va, sa, conf                   int32
	vna, sna, ca, ua, da, sat, dla T
	dest                           []any
}

func (d *Dialect[T]) newScanner(full bool) *rowScanner[T] {
	sc := &rowScanner[T]{d: d, full: full, dest: make([]any, 0, 32)}
	if d.Extra != nil {
		sc.extra = d.Extra()
	}
	return sc
}

// scan reads the current row into m, and its payload's size into size
// when the scanner reads ListColumns.
func (sc *rowScanner[T]) scan(r Row, m *state.Message, size *int) error {
	dest := append(sc.dest[:0], &m.ID, &m.BizID, &m.Key, &m.Partition, &sc.st, &m.HasBody)
	if sc.full {
		dest = append(dest, &m.Payload, &sc.headers)
	} else {
		dest = append(dest, size)
	}
	dest = append(dest, &m.Target, &m.Topic, &m.ForwardKey, &m.Tag, &m.Verify, &sc.va, &sc.vna,
		&sc.sst, &sc.sa, &sc.sna, &m.SendRef, &m.LeaseToken, &sc.lastErr, &sc.conf,
		&sc.ca, &sc.ua, &sc.da, &sc.sat, &m.OrderKey, &m.OrderSeq, &sc.dla)
	if sc.extra != nil {
		dest = append(dest, sc.extra.Dest()...)
	}
	sc.dest = dest
	// Scanning into a []byte that holds bytes may reuse them: start
	// each row with none, as the row keeps what it read.
	sc.headers, sc.lastErr = nil, nil
	if err := r.Scan(dest...); err != nil {
		return err
	}
	if sc.extra != nil {
		sc.extra.Set(m)
	}
	d := sc.d
	m.LastError = string(sc.lastErr)
	m.Status, m.SendStatus = state.Status(sc.st), state.SendStatus(sc.sst)
	m.VerifyAttempts, m.SendAttempts, m.Conflicts = int(sc.va), int(sc.sa), int(sc.conf)
	m.VerifyNextAt, m.SendNextAt = d.Time(&sc.vna), d.Time(&sc.sna)
	m.CreatedAt, m.UpdatedAt, m.DecidedAt, m.SentAt = d.Time(&sc.ca), d.Time(&sc.ua), d.Time(&sc.da), d.Time(&sc.sat)
	m.DeliverAt = d.Time(&sc.dla)
	var err error
	if m.Headers, err = codec.DecodeHeaders(sc.headers); err != nil {
		return fmt.Errorf("message %d: %w", m.ID, err)
	}
	return nil
}

// Collect reads every row of rows with scan and closes rows.
func Collect[R any](rows Rows, scan func(Row) (R, error)) ([]R, error) {
	defer rows.Close()
	var out []R
	for rows.Next() {
		x, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// Messages runs q and reads its rows of Columns.
func (d *Dialect[T]) Messages(ctx context.Context, db DB, q string, args ...any) ([]state.Message, error) {
	return d.MessagesOf(ctx, db, 0, q, args...)
}

// MessagesOf runs q, which selects at most expect rows of Columns (the
// rows of expect ids, say), and reads them.
func (d *Dialect[T]) MessagesOf(ctx context.Context, db DB, expect int, q string, args ...any) ([]state.Message, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return d.CollectMessages(rows, expect)
}

// Load reads (and locks, with ForUpdate) the rows a query selects, keyed
// as Tx.Load returns them.
func (d *Dialect[T]) Load(ctx context.Context, db DB, q string, args ...any) (map[store.MessageRef]*state.Message, error) {
	ms, err := d.Messages(ctx, db, q, args...)
	if err != nil {
		return nil, err
	}
	return Keyed(ms), nil
}

// LoadRetryNow implements Tx.LoadRetryNow on a transaction's db.
func (d *Dialect[T]) LoadRetryNow(ctx context.Context, db DB, bizID string, after int64, limit int) ([]state.Message, error) {
	q := `SELECT ` + d.Columns + ` FROM eventcenter_messages
	WHERE biz_id = ` + d.Param(1) + ` AND id > ` + d.Param(2) + ` AND ` + RetryNowWhere(d.HasBody) + `
	ORDER BY id LIMIT ` + d.Param(3) + d.ForUpdate
	return d.Messages(ctx, db, q, bizID, after, limit)
}

// Get implements store.Store.Get.
func (d *Dialect[T]) Get(ctx context.Context, db DB, bizID, key string) (state.Message, error) {
	m, err := d.ScanMessage(db.QueryRow(ctx, `SELECT `+d.Columns+` FROM eventcenter_messages
		WHERE biz_id = `+d.Param(1)+` AND message_key = `+d.Param(2), bizID, key))
	if errors.Is(err, d.NoRows) {
		return state.Message{}, fmt.Errorf("get %s:%s: %w", bizID, key, store.ErrNotFound)
	}
	if err != nil {
		return state.Message{}, fmt.Errorf("get %s:%s: %w", bizID, key, d.translate(err))
	}
	return m, nil
}

// where collects the conditions and parameters of a statement.
type where[T any] struct {
	d     *Dialect[T]
	conds []string
	args  []any
}

// add adds cond, whose %s is the next parameter, with its value a.
func (w *where[T]) add(cond string, a any) {
	w.args = append(w.args, a)
	w.conds = append(w.conds, fmt.Sprintf(cond, w.d.Param(len(w.args))))
}

// next returns the next parameter, with its value a.
func (w *where[T]) next(a any) string {
	w.args = append(w.args, a)
	return w.d.Param(len(w.args))
}

func (w *where[T]) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// List implements store.Store.List: it never reads payloads or headers.
func (d *Dialect[T]) List(ctx context.Context, db DB, f store.Filter) (store.Page, error) {
	after, err := codec.DecodeCursor(f.Cursor)
	if err != nil {
		return store.Page{}, fmt.Errorf("list: %w", err)
	}
	limit := codec.Limit(f.Limit, 100, 1000)
	w := &where[T]{d: d}
	if after > 0 {
		w.add("id < %s", after)
	}
	if f.BizID != "" {
		w.add("biz_id = %s", f.BizID)
	}
	if f.Status != state.None {
		w.add("status = %s", int16(f.Status))
	}
	if f.SendStatus != nil {
		w.add("send_status = %s", int16(*f.SendStatus))
	}
	if f.KeyContains != "" {
		var a any = f.KeyContains
		if d.KeyArg != nil {
			a = d.KeyArg(f.KeyContains)
		}
		w.add(d.KeyContains, a)
	}
	if !f.CreatedBefore.IsZero() {
		w.add("created_at < %s", d.TimeArg(f.CreatedBefore))
	}
	if f.Orphan {
		w.conds = append(w.conds, d.ListOrphan)
	}
	if !f.ScheduledAt.IsZero() {
		w.conds = append(w.conds, "status = "+Committed+" AND "+d.HasBody+" AND send_status = "+SendPending)
		w.add("deliver_at > %s", d.TimeArg(codec.Time(f.ScheduledAt)))
	}
	q := `SELECT ` + d.ListColumns() + ` FROM eventcenter_messages` + w.String()
	q += " ORDER BY id DESC LIMIT " + w.next(limit+1)
	rows, err := db.Query(ctx, q, w.args...)
	if err != nil {
		return store.Page{}, fmt.Errorf("list: %w", d.translate(err))
	}
	ms, err := d.collectSummaries(rows)
	if err != nil {
		return store.Page{}, fmt.Errorf("list: %w", d.translate(err))
	}
	var p store.Page
	if len(ms) > limit {
		ms = ms[:limit]
		p.Next = codec.EncodeCursor(ms[limit-1].ID)
	}
	p.Messages = ms
	return p, nil
}

// Counts implements store.Store.Counts.
// SCHEDULED rows are counted apart (Count.Scheduled) at now.
func (d *Dialect[T]) Counts(ctx context.Context, db DB, now time.Time) ([]store.Count, error) {
	cs, err := Select(ctx, db, `SELECT biz_id, status, send_status, count(*), min(created_at),
		sum(CASE WHEN status = `+Committed+` AND `+d.HasBody+` AND send_status = `+SendPending+` AND deliver_at > `+d.Param(1)+` THEN 1 ELSE 0 END)
		FROM eventcenter_messages
		GROUP BY biz_id, status, send_status ORDER BY biz_id, status, send_status`, []any{d.TimeArg(codec.Time(now))}, func(r Row) (store.Count, error) {
		var c store.Count
		var st, sst int16
		var oldest T
		err := r.Scan(&c.BizID, &st, &sst, &c.N, &oldest, &c.Scheduled)
		c.Status, c.SendStatus = state.Status(st), state.SendStatus(sst)
		c.Oldest = d.Time(&oldest)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("counts: %w", d.translate(err))
	}
	return cs, nil
}

// Select runs q and reads its rows with scan.
func Select[R any](ctx context.Context, db DB, q string, args []any, scan func(Row) (R, error)) ([]R, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return Collect(rows, scan)
}

// perBiz is a per-bizID statistic.
type perBiz struct {
	biz string
	n   int64
	at  time.Time
}

// perBiz runs q, which selects a bizID, a count when counted, and a time.
func (d *Dialect[T]) perBiz(ctx context.Context, db DB, q string, counted bool) ([]perBiz, error) {
	return Select(ctx, db, q, nil, func(r Row) (perBiz, error) {
		var p perBiz
		var at T
		dest := []any{&p.biz, &at}
		if counted {
			dest = []any{&p.biz, &p.n, &at}
		}
		err := r.Scan(dest...)
		p.at = d.Time(&at)
		return p, err
	})
}

// SendBacklog implements store.Backlogger: one pass over the partial
// index of pending sends (eventcenter_messages_send_due_biz), grouped by
// bizID.
func (d *Dialect[T]) SendBacklog(ctx context.Context, db DB, now time.Time) ([]store.BizBacklog, error) {
	at := d.Param(1)
	bs, err := Select(ctx, db, `SELECT biz_id, count(*), sum(CASE WHEN send_next_at <= `+at+` THEN 1 ELSE 0 END),
		min(send_next_at) FROM eventcenter_messages WHERE `+d.PendingSend()+` GROUP BY biz_id ORDER BY biz_id`,
		[]any{d.TimeArg(codec.Time(now))}, func(r Row) (store.BizBacklog, error) {
			var b store.BizBacklog
			var oldest T
			err := r.Scan(&b.BizID, &b.Pending, &b.Due, &oldest)
			if b.Due > 0 {
				// The earliest pending row is a due one when any is due.
				b.OldestDue = d.Time(&oldest)
			}
			return b, err
		})
	if err != nil {
		return nil, fmt.Errorf("send backlog: %w", d.translate(err))
	}
	return bs, nil
}

// OldestPrepared implements store.Store.OldestPrepared.
func (d *Dialect[T]) OldestPrepared(ctx context.Context, db DB) (map[string]time.Time, error) {
	ps, err := d.perBiz(ctx, db, d.OldestPreparedSQL, false)
	if err != nil {
		return nil, fmt.Errorf("oldest prepared: %w", d.translate(err))
	}
	out := make(map[string]time.Time, len(ps))
	for _, p := range ps {
		out[p.biz] = p.at
	}
	return out, nil
}

// OrphanCommits implements store.Store.OrphanCommits.
func (d *Dialect[T]) OrphanCommits(ctx context.Context, db DB) (map[string]store.OrphanStat, error) {
	ps, err := d.perBiz(ctx, db, d.OrphanCommitsSQL, true)
	if err != nil {
		return nil, fmt.Errorf("orphan commits: %w", d.translate(err))
	}
	out := make(map[string]store.OrphanStat, len(ps))
	for _, p := range ps {
		out[p.biz] = store.OrphanStat{N: p.n, Oldest: p.at}
	}
	return out, nil
}

const auditColumns = `biz_id, message_key, action, who, reason, at, status_before, status_after`

func (d *Dialect[T]) scanAudit(withID bool) func(Row) (store.AuditEntry, error) {
	return func(r Row) (store.AuditEntry, error) {
		var a store.AuditEntry
		var at T
		dest := []any{&a.BizID, &a.Key, &a.Action, &a.Who, &a.Reason, &at, &a.Before, &a.After}
		if withID {
			dest = append([]any{&a.ID}, dest...)
		}
		err := r.Scan(dest...)
		a.At = d.Time(&at)
		return a, err
	}
}

// Audit implements store.Store.Audit.
func (d *Dialect[T]) Audit(ctx context.Context, db DB, bizID, key string) ([]store.AuditEntry, error) {
	out, err := Select(ctx, db, `SELECT `+auditColumns+` FROM eventcenter_audit
		WHERE biz_id = `+d.Param(1)+` AND message_key = `+d.Param(2)+` ORDER BY id`, []any{bizID, key}, d.scanAudit(false))
	if err != nil {
		return nil, fmt.Errorf("audit %s:%s: %w", bizID, key, d.translate(err))
	}
	return out, nil
}

// AuditLog implements store.Store.AuditLog.
func (d *Dialect[T]) AuditLog(ctx context.Context, db DB, q store.AuditQuery) ([]store.AuditEntry, error) {
	if q.Limit <= 0 {
		return nil, errors.New("audit log: limit must be positive")
	}
	w := &where[T]{d: d}
	if q.BizID != "" {
		w.add("biz_id = %s", q.BizID)
	}
	if q.BeforeID > 0 {
		w.add("id < %s", q.BeforeID)
	}
	if !q.Since.IsZero() {
		w.add("at >= %s", d.TimeArg(q.Since))
	}
	s := `SELECT id, ` + auditColumns + ` FROM eventcenter_audit` + w.String()
	s += ` ORDER BY id DESC LIMIT ` + w.next(q.Limit)
	out, err := Select(ctx, db, s, w.args, d.scanAudit(true))
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", d.translate(err))
	}
	return out, nil
}

// PendingSend is PendingSend with the dialect's HasBody.
func (d *Dialect[T]) PendingSend() string { return PendingSend(d.HasBody) }

// SetIDs reads rows of (id, biz_id, message_key), the rows a batch just
// inserted, and sets the ID of the message of byRef each names; it closes
// rows and returns how many messages it set.
func SetIDs(rows Rows, byRef map[store.MessageRef]*state.Message) (int, error) {
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int64
		var r store.MessageRef
		if err := rows.Scan(&id, &r.BizID, &r.Key); err != nil {
			return n, err
		}
		if m := byRef[r]; m != nil {
			m.ID = id
			n++
		}
	}
	return n, rows.Err()
}

// ByRef returns ms keyed by reference.
func ByRef(ms []*state.Message) map[store.MessageRef]*state.Message {
	byRef := make(map[store.MessageRef]*state.Message, len(ms))
	for _, m := range ms {
		byRef[store.MessageRef{BizID: m.BizID, Key: m.Key}] = m
	}
	return byRef
}
