package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/migrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options configures the store. The zero value is usable.
type Options struct {
	// Now is the clock for leases and operator actions; nil means time.Now.
	Now func() time.Time
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// BusyTimeout is how long a write waits for another process's write
	// lock before failing; 0 means 10s.
	BusyTimeout time.Duration
	// ReadConns is the number of read-only connections; 0 means 4.
	ReadConns int
	// CheckOnly makes Open check that the schema is current instead of
	// migrating (an error wrapping store.ErrNotMigrated otherwise), and
	// not create a missing database file.
	CheckOnly bool
}

func (o *Options) validate() error {
	if o.BusyTimeout < 0 {
		return errors.New("sqlite options: BusyTimeout must not be negative")
	}
	if o.ReadConns < 0 {
		return errors.New("sqlite options: ReadConns must not be negative")
	}
	return nil
}

// Store is the SQLite store.Store. Create it with Open.
type Store struct {
	w, r *sql.DB
	now  func() time.Time
	log  *slog.Logger
}

var _ store.Store = (*Store)(nil)

// Open opens or creates the database file at path (created 0600, in a
// directory that must exist), applies the embedded migrations (or, with
// Options.CheckOnly, checks that they were applied), and returns the store. path is a file name (":memory:" is not
// supported: the store uses several connections; tests use a file in
// t.TempDir()). Close releases it.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file::memory:") {
		return nil, fmt.Errorf("open sqlite: path %q: a database file is needed", path)
	}
	if opts.BusyTimeout == 0 {
		opts.BusyTimeout = 10 * time.Second
	}
	if opts.ReadConns == 0 {
		opts.ReadConns = 4
	}
	s := &Store{now: opts.Now, log: opts.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if err := prepareFile(path, opts.CheckOnly); err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	wq := url.Values{}
	for k, v := range q {
		wq[k] = v
	}
	wq.Set("_txlock", "immediate")
	var err error
	s.w, err = sql.Open("sqlite", "file:"+escapePath(path)+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	prepare := s.migrate
	if opts.CheckOnly {
		prepare = s.checkSchema
	}
	if err := prepare(ctx); err != nil {
		_ = s.w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	q.Add("_pragma", "query_only(1)")
	s.r, err = sql.Open("sqlite", "file:"+escapePath(path)+"?"+q.Encode())
	if err != nil {
		_ = s.w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	s.r.SetMaxOpenConns(opts.ReadConns)
	s.r.SetMaxIdleConns(opts.ReadConns)
	if err := s.r.PingContext(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return s, nil
}

func escapePath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
}

// Close closes the database.
func (s *Store) Close() error {
	var errs []error
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close sqlite: %w", err)
	}
	return nil
}

func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		return err
	}
	return s.write(ctx, "migrate", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migrate.Table+` (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
			return err
		}
		var cur int
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM `+migrate.Table).Scan(&cur); err != nil {
			return err
		}
		if cur > migrate.Latest(ms) {
			s.log.Warn("sqlite schema is newer than this binary", "schema_version", cur, "binary_version", migrate.Latest(ms))
		}
		for _, m := range ms {
			if m.Version <= cur {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d %s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+migrate.Table+` (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, s.now().UnixMicro()); err != nil {
				return fmt.Errorf("migration %d %s: %w", m.Version, m.Name, err)
			}
			s.log.Info("applied sqlite migration", "version", m.Version, "name", m.Name)
		}
		return nil
	})
}

// write runs fn in a BEGIN IMMEDIATE transaction on the write connection.
func (s *Store) write(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", what, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: commit: %w", what, err)
	}
	return nil
}

// ---- row mapping ----

func micro(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func fromMicro(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMicro(n.Int64).UTC()
}

type scanner interface{ Scan(dest ...any) error }

func scanMessage(sc scanner) (state.Message, error) {
	var m state.Message
	var headers []byte
	var vna, sna, ca, ua, da, sa sql.NullInt64
	err := sc.Scan(&m.ID, &m.BizID, &m.Key, &m.Partition, &m.Status, &m.HasBody, &m.Payload, &headers,
		&m.Target, &m.Topic, &m.ForwardKey, &m.Tag, &m.Verify, &m.VerifyAttempts, &vna,
		&m.SendStatus, &m.SendAttempts, &sna, &m.SendRef, &m.LeaseToken, &m.LastError, &m.Conflicts,
		&ca, &ua, &da, &sa)
	if err != nil {
		return m, err
	}
	m.VerifyNextAt, m.SendNextAt = fromMicro(vna), fromMicro(sna)
	m.CreatedAt, m.UpdatedAt, m.DecidedAt, m.SentAt = fromMicro(ca), fromMicro(ua), fromMicro(da), fromMicro(sa)
	if m.Headers, err = codec.DecodeHeaders(headers); err != nil {
		return m, fmt.Errorf("message %d: %w", m.ID, err)
	}
	return m, nil
}

func scanMessages(rows *sql.Rows) ([]state.Message, error) {
	return codec.ScanAll(rows, func(r *sql.Rows) (state.Message, error) { return scanMessage(r) })
}

// ---- Apply ----

// Apply implements store.Store.
func (s *Store) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	if len(req.Changes) == 0 {
		return store.ApplyResult{}, nil
	}
	var res store.ApplyResult
	err := s.write(ctx, "apply", func(tx *sql.Tx) error {
		loaded, err := loadRefs(ctx, tx, store.Refs(req.Changes))
		if err != nil {
			return err
		}
		f := store.Fold(loaded, req.Changes)
		codec.Prepare(ctx, &f, s.now(), req)
		if err := writeFolded(ctx, tx, loaded, &f); err != nil {
			return err
		}
		res = codec.Result(&f)
		return nil
	})
	return res, err
}

func loadRefs(ctx context.Context, tx *sql.Tx, refs []store.MessageRef) (map[store.MessageRef]*state.Message, error) {
	loaded := make(map[store.MessageRef]*state.Message, len(refs))
	err := chunks(len(refs), 2, func(lo, hi int) error {
		args := make([]any, 0, 2*(hi-lo))
		for _, r := range refs[lo:hi] {
			args = append(args, r.BizID, r.Key)
		}
		rows, err := tx.QueryContext(ctx, `WITH r(b, k) AS (VALUES `+values(hi-lo, 2)+`)
			SELECT `+prefixed("m.", codec.Columns)+` FROM r CROSS JOIN eventcenter_messages AS m
			ON m.biz_id = r.b AND m.message_key = r.k`, args...)
		if err != nil {
			return err
		}
		ms, err := scanMessages(rows)
		if err != nil {
			return err
		}
		for i := range ms {
			loaded[store.MessageRef{BizID: ms[i].BizID, Key: ms[i].Key}] = &ms[i]
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load messages: %w", err)
	}
	return loaded, nil
}

const updateBodySQL = `UPDATE eventcenter_messages SET has_body = 1, payload = ?, headers = ?, target = ?, topic = ?,
	forward_key = ?, tag = ?, verify = ? WHERE id = ?`

// writeFolded writes a Fold result with multi-row statements (the driver
// parses every statement it runs, so one statement per row would cost a
// parse per row).
func writeFolded(ctx context.Context, tx *sql.Tx, loaded map[store.MessageRef]*state.Message, f *store.Folded) error {
	if len(f.Inserts) > 0 {
		cols := insertCols(f.Inserts)
		byRef := make(map[store.MessageRef]*state.Message, len(f.Inserts))
		for _, m := range f.Inserts {
			byRef[store.MessageRef{BizID: m.BizID, Key: m.Key}] = m
		}
		per := rowsPer(cols, "message_key")
		for lo := 0; lo < len(f.Inserts); lo += per {
			hi := min(lo+per, len(f.Inserts))
			q, args := insertSQL(cols, lo, hi, nil)
			if err := insertChunk(ctx, tx, q, args, byRef); err != nil {
				return fmt.Errorf("insert messages: %w", err)
			}
		}
	}
	var bodies []*state.Message
	if len(f.Updates) > 0 {
		for _, m := range f.Updates {
			if old := loaded[store.MessageRef{BizID: m.BizID, Key: m.Key}]; m.HasBody && !old.HasBody {
				bodies = append(bodies, m)
			}
		}
		cols := updateCols(f.Updates)
		per := rowsPer(cols, "id")
		for lo := 0; lo < len(f.Updates); lo += per {
			hi := min(lo+per, len(f.Updates))
			q, args := updateSQL(cols, lo, hi, nil)
			r, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return fmt.Errorf("update messages: %w", err)
			}
			if n, err := r.RowsAffected(); err != nil || n != int64(hi-lo) {
				return fmt.Errorf("update messages: %d of %d rows updated (%v)", n, hi-lo, err)
			}
		}
	}
	for _, m := range bodies {
		if _, err := tx.ExecContext(ctx, updateBodySQL, codec.PayloadArg(m), codec.HeadersArg(m), m.Target, m.Topic, m.ForwardKey,
			m.Tag, m.Verify, m.ID); err != nil {
			return fmt.Errorf("update message %s: %w", m.MessageID(), err)
		}
	}
	err := chunks(len(f.Audits), 8, func(lo, hi int) error {
		args := make([]any, 0, 8*(hi-lo))
		for _, a := range f.Audits[lo:hi] {
			args = append(args, a.BizID, a.Key, a.Action, a.Who, a.Reason, micro(a.At), a.Before, a.After)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO eventcenter_audit (biz_id, message_key, action, who, reason, at,
			status_before, status_after) VALUES `+values(hi-lo, 8), args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("insert audit: %w", err)
	}
	return nil
}

func insertChunk(ctx context.Context, tx *sql.Tx, q string, args []any, byRef map[store.MessageRef]*state.Message) error {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var r store.MessageRef
		if err := rows.Scan(&id, &r.BizID, &r.Key); err != nil {
			return err
		}
		if m := byRef[r]; m != nil {
			m.ID = id
		}
	}
	return rows.Err()
}

// maxParams bounds the parameters of one statement. SQLite allows 32766,
// but the driver binds each parameter by a linear search of the arguments, so
// large statements cost quadratic time; a few hundred is the sweet spot.
const maxParams = 500

// chunks calls fn for consecutive ranges of n rows of cols parameters each,
// as large as maxParams allows.
func chunks(n, cols int, fn func(lo, hi int) error) error {
	per := max(1, maxParams/cols)
	for lo := 0; lo < n; lo += per {
		if err := fn(lo, min(lo+per, n)); err != nil {
			return err
		}
	}
	return nil
}

// values returns "(?, ?), (?, ?)" for rows rows of cols placeholders.
func values(rows, cols int) string {
	row := "(" + strings.Repeat("?, ", cols-1) + "?)"
	var b strings.Builder
	b.Grow(rows * (len(row) + 2))
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

// prefixed qualifies each column of a comma-separated list.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// ---- claims and sends ----

func partitionsJSON(ps []int32) string {
	b, _ := json.Marshal(ps) // cannot fail for []int32
	return string(b)
}

// ClaimSends implements store.Store.
func (s *Store) ClaimSends(ctx context.Context, c store.Claim) ([]state.Message, error) {
	return s.claim(ctx, "claim sends", c, `UPDATE eventcenter_messages SET send_next_at = ?, lease_token = ?
		WHERE id IN (SELECT id FROM eventcenter_messages
			WHERE status = 2 AND send_status = 0 AND has_body = 1
			AND partition IN (SELECT value FROM json_each(?)) AND send_next_at <= ?
			ORDER BY send_next_at LIMIT ?)
		RETURNING `+codec.Columns)
}

// ClaimCheckbacks implements store.Store. It counts the attempt each claim
// is for (state.ClaimCheckback): a call whose center dies before its
// answer is written still counts.
func (s *Store) ClaimCheckbacks(ctx context.Context, c store.Claim) ([]state.Message, error) {
	return s.claim(ctx, "claim checkbacks", c, `UPDATE eventcenter_messages SET verify_next_at = ?, lease_token = ?,
			verify_attempts = verify_attempts + 1
		WHERE id IN (SELECT id FROM eventcenter_messages
			WHERE status = 1
			AND partition IN (SELECT value FROM json_each(?)) AND verify_next_at <= ?
			ORDER BY verify_next_at LIMIT ?)
		RETURNING `+codec.Columns)
}

func (s *Store) claim(ctx context.Context, what string, c store.Claim, q string) ([]state.Message, error) {
	if err := codec.CheckClaim(c); err != nil {
		return nil, err
	}
	if len(c.Partitions) == 0 {
		return nil, nil
	}
	now := codec.Time(s.now())
	var ms []state.Message
	err := s.write(ctx, what, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, now.Add(c.Lease).UnixMicro(), codec.LeaseToken(),
			partitionsJSON(c.Partitions), now.UnixMicro(), c.Limit)
		if err != nil {
			return err
		}
		ms, err = scanMessages(rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ms, nil
}

// MarkSent implements store.Store.
func (s *Store) MarkSent(ctx context.Context, sent []store.Sent) error {
	if len(sent) == 0 {
		return nil
	}
	now := codec.Time(s.now()).UnixMicro()
	return s.write(ctx, "mark sent", func(tx *sql.Tx) error {
		return chunks(len(sent), 2, func(lo, hi int) error {
			args := make([]any, 0, 2*(hi-lo)+2)
			for _, x := range sent[lo:hi] {
				args = append(args, x.ID, x.Ref)
			}
			args = append(args, now, now)
			_, err := tx.ExecContext(ctx, `WITH u(id, ref) AS (VALUES `+values(hi-lo, 2)+`)
				UPDATE eventcenter_messages SET send_status = 1, sent_at = ?, send_ref = u.ref, updated_at = ?
				FROM u WHERE eventcenter_messages.id = u.id AND status = 2 AND send_status = 0 AND has_body = 1`, args...)
			return err
		})
	})
}

// ---- reads ----

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, bizID, key string) (state.Message, error) {
	m, err := scanMessage(s.r.QueryRowContext(ctx, `SELECT `+codec.Columns+` FROM eventcenter_messages
		WHERE biz_id = ? AND message_key = ?`, bizID, key))
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("get %s:%s: %w", bizID, key, store.ErrNotFound)
	}
	if err != nil {
		return m, fmt.Errorf("get %s:%s: %w", bizID, key, err)
	}
	return m, nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, f store.Filter) (store.Page, error) {
	after, err := codec.DecodeCursor(f.Cursor)
	if err != nil {
		return store.Page{}, fmt.Errorf("list: %w", err)
	}
	limit := codec.Limit(f.Limit, 100, 1000)
	var where []string
	var args []any
	add := func(cond string, a any) {
		where = append(where, cond)
		args = append(args, a)
	}
	if after > 0 {
		add("id < ?", after)
	}
	if f.BizID != "" {
		add("biz_id = ?", f.BizID)
	}
	if f.Status != state.None {
		add("status = ?", f.Status)
	}
	if f.SendStatus != nil {
		add("send_status = ?", *f.SendStatus)
	}
	if f.KeyContains != "" {
		add("instr(message_key, ?) > 0", f.KeyContains)
	}
	if !f.CreatedBefore.IsZero() {
		add("created_at < ?", f.CreatedBefore.UnixMicro())
	}
	if f.Orphan {
		where = append(where, "status = 2 AND has_body = 0")
	}
	q := `SELECT ` + codec.Columns + ` FROM eventcenter_messages`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit+1)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return store.Page{}, fmt.Errorf("list: %w", err)
	}
	ms, err := scanMessages(rows)
	if err != nil {
		return store.Page{}, fmt.Errorf("list: %w", err)
	}
	var p store.Page
	if len(ms) > limit {
		ms = ms[:limit]
		p.Next = codec.EncodeCursor(ms[limit-1].ID)
	}
	p.Messages = ms
	return p, nil
}

// Counts implements store.Store.
func (s *Store) Counts(ctx context.Context) ([]store.Count, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT biz_id, status, send_status, count(*) FROM eventcenter_messages
		GROUP BY biz_id, status, send_status ORDER BY biz_id, status, send_status`)
	if err != nil {
		return nil, fmt.Errorf("counts: %w", err)
	}
	defer rows.Close()
	var cs []store.Count
	for rows.Next() {
		var c store.Count
		if err := rows.Scan(&c.BizID, &c.Status, &c.SendStatus, &c.N); err != nil {
			return nil, fmt.Errorf("counts: %w", err)
		}
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("counts: %w", err)
	}
	return cs, nil
}

// OldestPrepared implements store.Store.
func (s *Store) OldestPrepared(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT biz_id, min(created_at) FROM eventcenter_messages
		WHERE status = 1 GROUP BY biz_id`)
	if err != nil {
		return nil, fmt.Errorf("oldest prepared: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var biz string
		var at sql.NullInt64
		if err := rows.Scan(&biz, &at); err != nil {
			return nil, fmt.Errorf("oldest prepared: %w", err)
		}
		out[biz] = fromMicro(at)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("oldest prepared: %w", err)
	}
	return out, nil
}

// orphanCommitsSQL names the partial index: without statistics SQLite
// would rather walk the bizID index (the whole table) to group by bizID.
const orphanCommitsSQL = `SELECT biz_id, count(*), min(created_at)
	FROM eventcenter_messages INDEXED BY eventcenter_messages_orphan_commits
	WHERE status = 2 AND has_body = 0 GROUP BY biz_id`

// OrphanCommits implements store.Store (the partial index
// eventcenter_messages_orphan_commits holds only orphan rows).
func (s *Store) OrphanCommits(ctx context.Context) (map[string]store.OrphanStat, error) {
	rows, err := s.r.QueryContext(ctx, orphanCommitsSQL)
	if err != nil {
		return nil, fmt.Errorf("orphan commits: %w", err)
	}
	defer rows.Close()
	out := map[string]store.OrphanStat{}
	for rows.Next() {
		var biz string
		var n int64
		var at sql.NullInt64
		if err := rows.Scan(&biz, &n, &at); err != nil {
			return nil, fmt.Errorf("orphan commits: %w", err)
		}
		out[biz] = store.OrphanStat{N: n, Oldest: fromMicro(at)}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("orphan commits: %w", err)
	}
	return out, nil
}

// AddAudit implements store.Store.
func (s *Store) AddAudit(ctx context.Context, e store.AuditEntry) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO eventcenter_audit (biz_id, message_key, action, who, reason, at,
		status_before, status_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		e.BizID, e.Key, e.Action, e.Who, e.Reason, micro(e.At), e.Before, e.After)
	if err != nil {
		return fmt.Errorf("add audit for %s:%s: %w", e.BizID, e.Key, err)
	}
	return nil
}

// Audit implements store.Store.
func (s *Store) Audit(ctx context.Context, bizID, key string) ([]store.AuditEntry, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT biz_id, message_key, action, who, reason, at, status_before, status_after
		FROM eventcenter_audit WHERE biz_id = ? AND message_key = ? ORDER BY id`, bizID, key)
	if err != nil {
		return nil, fmt.Errorf("audit %s:%s: %w", bizID, key, err)
	}
	defer rows.Close()
	var out []store.AuditEntry
	for rows.Next() {
		var a store.AuditEntry
		var at sql.NullInt64
		if err := rows.Scan(&a.BizID, &a.Key, &a.Action, &a.Who, &a.Reason, &at, &a.Before, &a.After); err != nil {
			return nil, fmt.Errorf("audit %s:%s: %w", bizID, key, err)
		}
		a.At = fromMicro(at)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit %s:%s: %w", bizID, key, err)
	}
	return out, nil
}

// AuditLog implements store.Store.
func (s *Store) AuditLog(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, error) {
	if q.Limit <= 0 {
		return nil, errors.New("audit log: limit must be positive")
	}
	since := int64(math.MinInt64)
	if !q.Since.IsZero() {
		since = q.Since.UnixMicro()
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, biz_id, message_key, action, who, reason, at, status_before, status_after
		FROM eventcenter_audit WHERE (?1 = '' OR biz_id = ?1) AND (?2 <= 0 OR id < ?2) AND at >= ?3
		ORDER BY id DESC LIMIT ?4`, q.BizID, q.BeforeID, since, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer rows.Close()
	var out []store.AuditEntry
	for rows.Next() {
		var a store.AuditEntry
		var at sql.NullInt64
		if err := rows.Scan(&a.ID, &a.BizID, &a.Key, &a.Action, &a.Who, &a.Reason, &at, &a.Before, &a.After); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		a.At = fromMicro(at)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return out, nil
}

// PurgeAudit implements store.Store.
func (s *Store) PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, errors.New("purge audit: limit must be positive")
	}
	n := 0
	err := s.write(ctx, "purge audit", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM eventcenter_audit WHERE id IN (
			SELECT id FROM eventcenter_audit WHERE at < ? ORDER BY id LIMIT ?)`, before.UnixMicro(), limit)
		if err != nil {
			return err
		}
		k, err := res.RowsAffected()
		n = int(k)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// ---- operator bulk actions and retention ----

// retryNowChunk is how many messages one RetryNowBizID transaction resets.
const retryNowChunk = 500

// retryNowSQL selects one chunk of the rows store.RetryNowEligible names.
var retryNowSQL = `SELECT ` + codec.Columns + ` FROM eventcenter_messages
	WHERE biz_id = ? AND id > ? AND ` + store.RetryNowWhere("has_body = 1") + `
	ORDER BY id LIMIT ?`

// RetryNowBizID implements store.Store.
func (s *Store) RetryNowBizID(ctx context.Context, bizID string, who store.Actor) (int, error) {
	total := 0
	var lastID int64
	for {
		n := 0
		err := s.write(ctx, "retry now "+bizID, func(tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, retryNowSQL, bizID, lastID, retryNowChunk)
			if err != nil {
				return err
			}
			ms, err := scanMessages(rows)
			if err != nil {
				return err
			}
			n = len(ms)
			if n == 0 {
				return nil
			}
			lastID = ms[n-1].ID
			loaded, changes := retryNowChanges(ms, codec.Time(s.now()), who)
			f := store.Fold(loaded, changes)
			codec.Prepare(ctx, &f, s.now(), store.ApplyRequest{})
			if err := writeFolded(ctx, tx, loaded, &f); err != nil {
				return err
			}
			total += len(f.Updates)
			return nil
		})
		if err != nil {
			return total, err
		}
		if n < retryNowChunk {
			return total, nil
		}
	}
}

func retryNowChanges(ms []state.Message, now time.Time, who store.Actor) (map[store.MessageRef]*state.Message, []store.Change) {
	loaded := make(map[store.MessageRef]*state.Message, len(ms))
	changes := make([]store.Change, len(ms))
	for i := range ms {
		m := &ms[i]
		loaded[store.MessageRef{BizID: m.BizID, Key: m.Key}] = m
		a := who
		changes[i] = store.Change{BizID: m.BizID, Key: m.Key, Partition: m.Partition,
			Event: state.Event{Kind: state.KindRetryNow, At: now}, Audit: &a}
	}
	return loaded, changes
}

// Purge implements store.Store.
func (s *Store) Purge(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, errors.New("purge: limit must be positive")
	}
	n := 0
	err := s.write(ctx, "purge", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `DELETE FROM eventcenter_messages WHERE id IN (
				SELECT id FROM eventcenter_messages WHERE status = 3 AND decided_at < ?1
				UNION ALL
				SELECT id FROM eventcenter_messages WHERE status = 2 AND send_status = 1 AND sent_at < ?1
				LIMIT ?2)
			RETURNING biz_id, message_key`, before.UnixMicro(), limit)
		if err != nil {
			return err
		}
		var gone []store.MessageRef
		for rows.Next() {
			var r store.MessageRef
			if err := rows.Scan(&r.BizID, &r.Key); err != nil {
				rows.Close()
				return err
			}
			gone = append(gone, r)
		}
		err = rows.Err()
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		n = len(gone)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
