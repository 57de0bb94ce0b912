package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
	"github.com/eventcenter/eventcenter/store/migrate"
)

// Store is the SQLite store.Store. Create it with Open.
type Store struct {
	// shared: Apply, RetryNowBizID, Get, List, Counts, OldestPrepared,
	// OrphanCommits, Audit, AuditLog.
	shared
	w, r *sql.DB
	now  func() time.Time
	log  *slog.Logger
}

type shared = sqlcore.Store[sql.NullInt64]

var _ store.Store = (*Store)(nil)

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
	s := &Store{now: sqlcore.Clock(opts.Now), log: sqlcore.Logger(opts.Logger)}
	s.Core, _ = sqlcore.NewCore("sqlite", txRunner{s}, s.now, s.log, 1, nil, nil) // cannot fail
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
	s.Reads = sqlcore.NewReads(dialect, sqlcore.SQLDB(s.r), s.now)
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
	ms, err := migrations()
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

// write runs fn in a BEGIN IMMEDIATE transaction on the write connection;
// its errors say what failed.
func (s *Store) write(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	if err := s.inTx(ctx, fn); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// inTx runs fn in a BEGIN IMMEDIATE transaction on the write connection.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return sqlcore.InTx(ctx, s.w, fn)
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

// dialect is what the shared read side needs of SQLite.
var dialect = &sqlcore.Dialect[sql.NullInt64]{
	Param:             sqlcore.QuestionParam,
	Columns:           codec.Columns,
	PayloadSize:       "coalesce(length(payload), 0)",
	HasBody:           "has_body = 1",
	ListOrphan:        sqlcore.IsOrphan("has_body = 0"),
	KeyContains:       "instr(message_key, %s) > 0",
	TimeArg:           func(t time.Time) any { return t.UnixMicro() },
	Time:              func(n *sql.NullInt64) time.Time { return fromMicro(*n) },
	OldestPreparedSQL: `SELECT biz_id, min(created_at) FROM eventcenter_messages WHERE ` + sqlcore.IsPrepared() + ` GROUP BY biz_id`,
	OrphanCommitsSQL:  orphanCommitsSQL,
	NoRows:            sql.ErrNoRows,
}

// ---- Apply ----

// txRunner runs the core's transactions on the write connection.
type txRunner struct{ s *Store }

func (r txRunner) InTx(ctx context.Context, fn func(tx sqlcore.Tx) error) error {
	return r.s.inTx(ctx, func(tx *sql.Tx) error { return fn(liteTx{tx}) })
}

// liteTx is one transaction of txRunner (BEGIN IMMEDIATE: the database is
// locked for writing, so reads need no row locks).
type liteTx struct{ tx *sql.Tx }

// Load reads the rows of refs that exist.
func (t liteTx) Load(ctx context.Context, refs []store.MessageRef) (map[store.MessageRef]*state.Message, error) {
	loaded := make(map[store.MessageRef]*state.Message, len(refs))
	err := chunks(len(refs), 2, func(lo, hi int) error {
		args := make([]any, 0, 2*(hi-lo))
		for _, r := range refs[lo:hi] {
			args = append(args, r.BizID, r.Key)
		}
		ms, err := dialect.Load(ctx, sqlcore.SQLDB(t.tx), `WITH r(b, k) AS (VALUES `+sqlcore.Values(hi-lo, 2)+`)
			SELECT `+prefixed("m.", codec.Columns)+` FROM r CROSS JOIN eventcenter_messages AS m
			ON m.biz_id = r.b AND m.message_key = r.k`, args...)
		maps.Copy(loaded, ms)
		return err
	})
	return loaded, err
}

// LoadRetryNow implements sqlcore.Tx.
func (t liteTx) LoadRetryNow(ctx context.Context, bizID string, after int64, limit int) ([]state.Message, error) {
	return dialect.LoadRetryNow(ctx, sqlcore.SQLDB(t.tx), bizID, after, limit)
}

// orderSQL is SQLite's dialect of the ordering steps.
var orderSQL = sqlcore.OrderSQL{Param: sqlcore.QuestionParam, Upsert: sqlcore.SQLiteUpsert}

// AssignSeqs implements sqlcore.Tx.
func (t liteTx) AssignSeqs(ctx context.Context, need []*state.Message) error {
	return sqlcore.SQLOrder{DB: sqlcore.SQLDB(t.tx), SQL: orderSQL}.AssignSeqs(ctx, need)
}

// Holders implements sqlcore.Tx.
func (t liteTx) Holders(ctx context.Context, refs []store.OrderRef, exclude []int64) (map[store.OrderRef]int64, error) {
	return sqlcore.SQLOrder{DB: sqlcore.SQLDB(t.tx), SQL: orderSQL}.Holders(ctx, refs, exclude)
}

// Wake implements sqlcore.Tx.
func (t liteTx) Wake(ctx context.Context, ids []int64, now time.Time) (int, error) {
	res, err := t.tx.ExecContext(ctx, sqlcore.WakeSQL(sqlcore.QuestionParam, len(ids)), sqlcore.WakeArgs(now.UnixMicro(), ids)...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Write implements sqlcore.Tx.
func (t liteTx) Write(ctx context.Context, loaded map[store.MessageRef]*state.Message, f *store.Folded) error {
	return writeFolded(ctx, t.tx, loaded, f)
}

const updateBodySQL = `UPDATE eventcenter_messages SET has_body = 1, payload = ?, headers = ?, target = ?, topic = ?,
	forward_key = ?, tag = ?, verify = ?, order_key = ?, deliver_at = ? WHERE id = ?`

// writeFolded writes a Fold result with multi-row statements (the driver
// parses every statement it runs, so one statement per row would cost a
// parse per row).
func writeFolded(ctx context.Context, tx *sql.Tx, loaded map[store.MessageRef]*state.Message, f *store.Folded) error {
	if len(f.Inserts) > 0 {
		cols := insertCols(f.Inserts)
		byRef := sqlcore.ByRef(f.Inserts)
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
			m.Tag, m.Verify, m.OrderKey, micro(m.DeliverAt), m.ID); err != nil {
			return fmt.Errorf("update message %s: %w", m.MessageID(), err)
		}
	}
	err := chunks(len(f.Audits), 8, func(lo, hi int) error {
		args := make([]any, 0, 8*(hi-lo))
		for _, a := range f.Audits[lo:hi] {
			args = append(args, a.BizID, a.Key, a.Action, a.Who, a.Reason, micro(a.At), a.Before, a.After)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO eventcenter_audit (biz_id, message_key, action, who, reason, at,
			status_before, status_after) VALUES `+sqlcore.Values(hi-lo, 8), args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("insert audit: %w", err)
	}
	return nil
}

func insertChunk(ctx context.Context, tx *sql.Tx, q string, args []any, byRef map[store.MessageRef]*state.Message) error {
	rows, err := sqlcore.SQLDB(tx).Query(ctx, q, args...)
	if err != nil {
		return err
	}
	_, err = sqlcore.SetIDs(rows, byRef)
	return err
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
	if c.FairSends != nil {
		ms, err := s.claimFair(ctx, c)
		if err != nil {
			return nil, err
		}
		return s.claimRuns(ctx, ms, c), nil
	}
	free := ""
	if c.Ordered {
		free = " AND " + sqlcore.OrderFree("eventcenter_messages")
	}
	ms, err := s.claim(ctx, "claim sends", c, `UPDATE eventcenter_messages SET send_next_at = ?, lease_token = ?
		WHERE id IN (SELECT id FROM eventcenter_messages
			WHERE `+dialect.PendingSend()+free+`
			AND partition IN (SELECT value FROM json_each(?)) AND send_next_at <= ?
			ORDER BY send_next_at LIMIT ?)
		RETURNING `+codec.Columns)
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
	err := s.write(ctx, "claim runs", func(tx *sql.Tx) error {
		var err error
		out, err = dialect.ClaimRuns(ctx, sqlcore.SQLDB(tx), heads, c, codec.Time(s.now()))
		return err
	})
	if err != nil {
		s.log.Warn("lease the runs behind claimed order keys failed; sending their heads alone", "err", err)
		return heads
	}
	return out
}

// ClaimCheckbacks implements store.Store. It counts the attempt each claim
// is for (state.ClaimCheckback): a call whose center dies before its
// answer is written still counts.
func (s *Store) ClaimCheckbacks(ctx context.Context, c store.Claim) ([]state.Message, error) {
	if c.FairCheckbacks != nil {
		return s.claimFairCheckbacks(ctx, c)
	}
	return s.claim(ctx, "claim checkbacks", c, `UPDATE eventcenter_messages SET verify_next_at = ?, lease_token = ?,
			verify_attempts = verify_attempts + 1
		WHERE id IN (SELECT id FROM eventcenter_messages
			WHERE `+sqlcore.IsPrepared()+`
			AND partition IN (SELECT value FROM json_each(?)) AND verify_next_at <= ?
			ORDER BY verify_next_at LIMIT ?)
		RETURNING `+codec.Columns)
}

func (s *Store) claim(ctx context.Context, what string, c store.Claim, q string) ([]state.Message, error) {
	return sqlcore.Claim(c, func() ([]state.Message, error) {
		now := codec.Time(s.now())
		var ms []state.Message
		err := s.write(ctx, what, func(tx *sql.Tx) error {
			var err error
			ms, err = dialect.Messages(ctx, sqlcore.SQLDB(tx), q, now.Add(c.Lease).UnixMicro(), codec.LeaseToken(),
				partitionsJSON(c.Partitions), now.UnixMicro(), c.Limit)
			return err
		})
		return ms, err
	})
}

// MarkSent implements store.Store.
func (s *Store) MarkSent(ctx context.Context, sent []store.Sent) error {
	if len(sent) == 0 {
		return nil
	}
	now := codec.Time(s.now()).UnixMicro()
	return s.write(ctx, "mark sent", func(tx *sql.Tx) error {
		if err := chunks(len(sent), 2, func(lo, hi int) error {
			args := make([]any, 0, 2*(hi-lo)+2)
			for _, x := range sent[lo:hi] {
				args = append(args, x.ID, x.Ref)
			}
			args = append(args, now, now)
			_, err := tx.ExecContext(ctx, `WITH u(id, ref) AS (VALUES `+sqlcore.Values(hi-lo, 2)+`)
				UPDATE eventcenter_messages SET `+sqlcore.MarkSentSet(sqlcore.Plain, "?", "u.ref")+`
				FROM u WHERE eventcenter_messages.id = u.id AND `+dialect.PendingSend(), args...)
			return err
		}); err != nil {
			return err
		}
		var ids []int64
		for _, x := range sent {
			if x.Ordered {
				ids = append(ids, x.ID)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, sqlcore.WakeSQL(sqlcore.QuestionParam, len(ids)), sqlcore.WakeArgs(now, ids)...)
		return err
	})
}

// ---- reads (the others are sqlcore.Reads) ----

// orphanCommitsSQL names the partial index: without statistics SQLite
// would rather walk the bizID index (the whole table) to group by bizID.
var orphanCommitsSQL = `SELECT biz_id, count(*), min(created_at)
	FROM eventcenter_messages INDEXED BY eventcenter_messages_orphan_commits
	WHERE ` + sqlcore.IsOrphan("has_body = 0") + ` GROUP BY biz_id`

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

// Purge implements store.Store.
func (s *Store) Purge(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, errors.New("purge: limit must be positive")
	}
	n := 0
	err := s.write(ctx, "purge", func(tx *sql.Tx) error {
		gone, err := sqlcore.Select(ctx, sqlcore.SQLDB(tx), `DELETE FROM eventcenter_messages WHERE id IN (
				SELECT id FROM eventcenter_messages WHERE `+sqlcore.PurgeRolledBack("?1")+`
				UNION ALL
				SELECT id FROM eventcenter_messages WHERE `+sqlcore.PurgeSent("?1")+`
				LIMIT ?2)
			RETURNING biz_id, message_key`, []any{before.UnixMicro(), limit}, func(r sqlcore.Row) (store.MessageRef, error) {
			var gone store.MessageRef
			err := r.Scan(&gone.BizID, &gone.Key)
			return gone, err
		})
		n = len(gone)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
