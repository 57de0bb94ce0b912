package mysql

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/migrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

func migrations() ([]migrate.Migration, error) { return migrate.Load(migrationFS, "migrations") }

// Options configures the store. The zero value is usable.
type Options struct {
	// Now is the clock for leases and operator actions; nil means time.Now.
	Now func() time.Time
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// ApplyTries is how often Apply tries a batch that hits a concurrent
	// insert of the same key, a deadlock or a lock wait timeout; 0 means 5.
	ApplyTries int
	// CloseDB makes Close close the *sql.DB given to New.
	CloseDB bool
}

func (o *Options) validate() error {
	if o.ApplyTries < 0 {
		return errors.New("mysql options: ApplyTries must not be negative")
	}
	return nil
}

// Store is the MySQL / MariaDB store.Store. Create it with New.
type Store struct {
	db      *sql.DB
	now     func() time.Time
	log     *slog.Logger
	tries   int
	closeDB bool
	// beforeWrite, set by tests, runs in Apply between the row lookup and
	// the inserts.
	beforeWrite func()
}

var _ store.Store = (*Store)(nil)

// New returns a store on db, opened with OpenDB. The caller owns db unless
// Options.CloseDB is set. New does no I/O; call CheckSchema at start-up.
func New(db *sql.DB, opts Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("mysql store: nil db")
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &Store{db: db, now: opts.Now, log: opts.Logger, tries: opts.ApplyTries, closeDB: opts.CloseDB}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.tries == 0 {
		s.tries = 5
	}
	return s, nil
}

// Close closes the db when Options.CloseDB was set.
func (s *Store) Close() error {
	if !s.closeDB {
		return nil
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close mysql: %w", err)
	}
	return nil
}

// Migrate checks the server version and applies the embedded migrations not
// yet applied, under a named lock (GET_LOCK: several instances may run it at
// once) in the DSN's database. MySQL commits DDL at once: a migration that
// fails half-way leaves what it created; fix the cause and drop those
// tables or indexes before running it again.
func Migrate(ctx context.Context, db *sql.DB) error {
	if err := CheckVersion(ctx, db); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(CONCAT('eventcenter_migrate:', DATABASE()), 60)`).Scan(&got); err != nil {
		return fmt.Errorf("migrate: lock: %w", translate(err))
	}
	if !got.Valid || got.Int64 != 1 {
		return errors.New("migrate: another migration held the lock for 60s")
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(rctx, `SELECT RELEASE_LOCK(CONCAT('eventcenter_migrate:', DATABASE()))`)
	}()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migrate.Table+` (
		version INT NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL,
		applied_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE = InnoDB`); err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	var cur int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+migrate.Table).Scan(&cur); err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	for _, m := range ms {
		if m.Version <= cur {
			continue
		}
		for _, stmt := range statements(m.SQL) {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrate: migration %d %s: %w", m.Version, m.Name, translate(err))
			}
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO `+migrate.Table+` (version, name) VALUES (?, ?)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("migrate: migration %d %s: %w", m.Version, m.Name, translate(err))
		}
	}
	return nil
}

// statements splits a migration file into statements: they end with ";"
// at the end of a line; lines starting with "--" are comments.
func statements(script string) []string {
	var out []string
	var b strings.Builder
	for line := range strings.Lines(script) {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		b.WriteString(line)
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(b.String()), ";"))
			b.Reset()
		}
	}
	if s := strings.TrimSpace(b.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// CheckSchema checks the server version (an error wrapping ErrOldServer,
// naming the version found) and returns an error wrapping
// store.ErrNotMigrated when the schema is missing or older than this
// binary's migrations.
func CheckSchema(ctx context.Context, db *sql.DB) error {
	if err := CheckVersion(ctx, db); err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("check schema: %w", err)
	}
	want := migrate.Latest(ms)
	var cur int
	err = db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+migrate.Table).Scan(&cur)
	if err != nil {
		err = translate(err)
		if errors.Is(err, store.ErrNotMigrated) {
			return fmt.Errorf("check schema: no %s table: %w", migrate.Table, store.ErrNotMigrated)
		}
		return fmt.Errorf("check schema: %w", err)
	}
	if cur < want {
		return fmt.Errorf("check schema: version %d, this binary needs %d: %w", cur, want, store.ErrNotMigrated)
	}
	return nil
}

// CheckSchema is the package function on the store's db.
func (s *Store) CheckSchema(ctx context.Context) error { return CheckSchema(ctx, s.db) }

// ---- row mapping ----

// columns is codec.Columns with `partition` quoted (a reserved word here).
var columns = strings.Replace(codec.Columns, " partition,", " `partition`,", 1)

func dt(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return codec.Time(t)
}

func fromDT(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

type scanner interface{ Scan(dest ...any) error }

func scanMessage(sc scanner) (state.Message, error) {
	var m state.Message
	var headers, lastErr []byte
	var vna, sna, ca, ua, da, sa sql.NullTime
	err := sc.Scan(&m.ID, &m.BizID, &m.Key, &m.Partition, &m.Status, &m.HasBody, &m.Payload, &headers,
		&m.Target, &m.Topic, &m.ForwardKey, &m.Tag, &m.Verify, &m.VerifyAttempts, &vna,
		&m.SendStatus, &m.SendAttempts, &sna, &m.SendRef, &m.LeaseToken, &lastErr, &m.Conflicts,
		&ca, &ua, &da, &sa)
	if err != nil {
		return m, err
	}
	m.LastError = string(lastErr)
	m.VerifyNextAt, m.SendNextAt = fromDT(vna), fromDT(sna)
	m.CreatedAt, m.UpdatedAt, m.DecidedAt, m.SentAt = fromDT(ca), fromDT(ua), fromDT(da), fromDT(sa)
	if m.Headers, err = codec.DecodeHeaders(headers); err != nil {
		return m, fmt.Errorf("message %d: %w", m.ID, err)
	}
	return m, nil
}

func scanMessages(rows *sql.Rows) ([]state.Message, error) {
	return codec.ScanAll(rows, func(r *sql.Rows) (state.Message, error) { return scanMessage(r) })
}

// placeholders returns "(?, ?), (?, ?)" for rows rows of cols placeholders.
func placeholders(rows, cols int) string {
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

// byKeys returns "(biz_id = ? AND message_key IN (?, ...)) OR ..." for refs,
// one group per bizID (a range on the unique key for each), and its args.
func byKeys(refs []store.MessageRef) (string, []any) {
	order := []string{}
	groups := map[string][]string{}
	for _, r := range refs {
		if _, ok := groups[r.BizID]; !ok {
			order = append(order, r.BizID)
		}
		groups[r.BizID] = append(groups[r.BizID], r.Key)
	}
	var b strings.Builder
	args := make([]any, 0, len(refs)+len(order))
	for i, biz := range order {
		if i > 0 {
			b.WriteString(" OR ")
		}
		keys := groups[biz]
		b.WriteString("(biz_id = ? AND message_key IN (")
		b.WriteString(strings.TrimSuffix(strings.Repeat("?, ", len(keys)), ", "))
		b.WriteString("))")
		args = append(args, biz)
		for _, k := range keys {
			args = append(args, k)
		}
	}
	return b.String(), args
}

// ---- reads ----

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, bizID, key string) (state.Message, error) {
	m, err := scanMessage(s.db.QueryRowContext(ctx, `SELECT `+columns+` FROM eventcenter_messages
		WHERE biz_id = ? AND message_key = ?`, bizID, key))
	if errors.Is(err, sql.ErrNoRows) {
		return state.Message{}, fmt.Errorf("get %s:%s: %w", bizID, key, store.ErrNotFound)
	}
	if err != nil {
		return state.Message{}, fmt.Errorf("get %s:%s: %w", bizID, key, translate(err))
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
		add("status = ?", int16(f.Status))
	}
	if f.SendStatus != nil {
		add("send_status = ?", int16(*f.SendStatus))
	}
	if f.KeyContains != "" {
		add("LOCATE(?, message_key) > 0", []byte(f.KeyContains))
	}
	if !f.CreatedBefore.IsZero() {
		add("created_at < ?", codec.Time(f.CreatedBefore))
	}
	if f.Orphan {
		// The orphan index's column (status = 2 AND NOT has_body).
		where = append(where, "orphan_biz IS NOT NULL")
	}
	q := `SELECT ` + columns + ` FROM eventcenter_messages`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit+1)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return store.Page{}, fmt.Errorf("list: %w", translate(err))
	}
	ms, err := scanMessages(rows)
	if err != nil {
		return store.Page{}, fmt.Errorf("list: %w", translate(err))
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
	rows, err := s.db.QueryContext(ctx, `SELECT biz_id, status, send_status, COUNT(*) FROM eventcenter_messages
		GROUP BY biz_id, status, send_status ORDER BY biz_id, status, send_status`)
	if err != nil {
		return nil, fmt.Errorf("counts: %w", translate(err))
	}
	defer rows.Close()
	var cs []store.Count
	for rows.Next() {
		var c store.Count
		if err := rows.Scan(&c.BizID, &c.Status, &c.SendStatus, &c.N); err != nil {
			return nil, fmt.Errorf("counts: %w", translate(err))
		}
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("counts: %w", translate(err))
	}
	return cs, nil
}

// oldestPreparedSQL reads the index of PREPARED rows (prepared_biz is the
// bizID of PREPARED rows, NULL for the others).
const oldestPreparedSQL = `SELECT prepared_biz, MIN(created_at) FROM eventcenter_messages
	WHERE prepared_biz IS NOT NULL GROUP BY prepared_biz`

// OldestPrepared implements store.Store.
func (s *Store) OldestPrepared(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	err := s.perBiz(ctx, oldestPreparedSQL, func(biz string, _ int64, at time.Time) { out[biz] = at })
	if err != nil {
		return nil, fmt.Errorf("oldest prepared: %w", err)
	}
	return out, nil
}

// orphanCommitsSQL reads the index of orphan COMMITs (orphan_biz is the
// bizID of COMMITTED rows without a body, NULL for the others): a handful
// of index entries, not the table.
const orphanCommitsSQL = `SELECT orphan_biz, COUNT(*), MIN(created_at) FROM eventcenter_messages
	WHERE orphan_biz IS NOT NULL GROUP BY orphan_biz`

// OrphanCommits implements store.Store.
func (s *Store) OrphanCommits(ctx context.Context) (map[string]store.OrphanStat, error) {
	out := map[string]store.OrphanStat{}
	err := s.perBiz(ctx, orphanCommitsSQL, func(biz string, n int64, at time.Time) {
		out[biz] = store.OrphanStat{N: n, Oldest: at}
	})
	if err != nil {
		return nil, fmt.Errorf("orphan commits: %w", err)
	}
	return out, nil
}

// perBiz runs q, which selects a bizID, optionally a count, and a time.
func (s *Store) perBiz(ctx context.Context, q string, fn func(biz string, n int64, at time.Time)) error {
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return translate(err)
	}
	for rows.Next() {
		var biz string
		var n int64
		var at sql.NullTime
		dest := []any{&biz, &n, &at}
		if len(cols) == 2 {
			dest = []any{&biz, &at}
		}
		if err := rows.Scan(dest...); err != nil {
			return translate(err)
		}
		fn(biz, n, fromDT(at))
	}
	return translate(rows.Err())
}

// AddAudit implements store.Store.
func (s *Store) AddAudit(ctx context.Context, e store.AuditEntry) error {
	q, args := insertAudit([]store.AuditEntry{e})
	if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("add audit for %s:%s: %w", e.BizID, e.Key, translate(err))
	}
	return nil
}

func insertAudit(as []store.AuditEntry) (string, []any) {
	args := make([]any, 0, 8*len(as))
	for _, a := range as {
		args = append(args, a.BizID, a.Key, a.Action, a.Who, a.Reason, dt(a.At), a.Before, a.After)
	}
	return `INSERT INTO eventcenter_audit (biz_id, message_key, action, who, reason, at, status_before, status_after)
		VALUES ` + placeholders(len(as), 8), args
}

// AuditLog implements store.Store.
func (s *Store) AuditLog(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, error) {
	if q.Limit <= 0 {
		return nil, errors.New("audit log: limit must be positive")
	}
	query := `SELECT id, biz_id, message_key, action, who, reason, at, status_before, status_after
		FROM eventcenter_audit WHERE 1=1`
	var args []any
	if q.BizID != "" {
		query += ` AND biz_id = ?`
		args = append(args, q.BizID)
	}
	if q.BeforeID > 0 {
		query += ` AND id < ?`
		args = append(args, q.BeforeID)
	}
	if !q.Since.IsZero() {
		query += ` AND at >= ?`
		args = append(args, dt(q.Since))
	}
	rows, err := s.db.QueryContext(ctx, query+` ORDER BY id DESC LIMIT ?`, append(args, q.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", translate(err))
	}
	defer rows.Close()
	var out []store.AuditEntry
	for rows.Next() {
		var a store.AuditEntry
		var at sql.NullTime
		if err := rows.Scan(&a.ID, &a.BizID, &a.Key, &a.Action, &a.Who, &a.Reason, &at, &a.Before, &a.After); err != nil {
			return nil, fmt.Errorf("audit log: %w", translate(err))
		}
		a.At = fromDT(at)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit log: %w", translate(err))
	}
	return out, nil
}

// PurgeAudit implements store.Store.
func (s *Store) PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, errors.New("purge audit: limit must be positive")
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM eventcenter_audit WHERE at < ? ORDER BY id LIMIT ?`, dt(before), limit)
	if err != nil {
		return 0, fmt.Errorf("purge audit: %w", translate(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purge audit: %w", translate(err))
	}
	return int(n), nil
}

// Audit implements store.Store.
func (s *Store) Audit(ctx context.Context, bizID, key string) ([]store.AuditEntry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT biz_id, message_key, action, who, reason, at, status_before, status_after
		FROM eventcenter_audit WHERE biz_id = ? AND message_key = ? ORDER BY id`, bizID, key)
	if err != nil {
		return nil, fmt.Errorf("audit %s:%s: %w", bizID, key, translate(err))
	}
	defer rows.Close()
	var out []store.AuditEntry
	for rows.Next() {
		var a store.AuditEntry
		var at sql.NullTime
		if err := rows.Scan(&a.BizID, &a.Key, &a.Action, &a.Who, &a.Reason, &at, &a.Before, &a.After); err != nil {
			return nil, fmt.Errorf("audit %s:%s: %w", bizID, key, translate(err))
		}
		a.At = fromDT(at)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit %s:%s: %w", bizID, key, translate(err))
	}
	return out, nil
}
