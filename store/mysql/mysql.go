package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

// Options configures the store. The zero value is usable.
type Options struct {
	// CloseDB makes Close close the *sql.DB given to New.
	CloseDB bool
	// Now is the clock for leases and operator actions; nil means time.Now.
	Now func() time.Time
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// ApplyTries is how often Apply tries a batch that hits a concurrent
	// insert of the same key, a deadlock or a lock wait timeout; 0 means 5.
	ApplyTries int
}

// Store is the MySQL / MariaDB store.Store. Create it with New.
type Store struct {
	// shared: Apply, RetryNowBizID, Get, List, Counts, OldestPrepared,
	// OrphanCommits, Audit, AuditLog.
	shared
	db    *sql.DB
	now   func() time.Time
	log   *slog.Logger
	tries int
	// closeDB: Close closes db.
	closeDB bool
	// beforeWrite, set by tests, runs in Apply between the row lookup and
	// the inserts.
	beforeWrite func()
}

type shared = sqlcore.Store[sql.NullTime]

var _ store.Store = (*Store)(nil)

// New returns a store on db, opened with OpenDB. The caller owns db unless
// Options.CloseDB is set. New does no I/O; call CheckSchema at start-up.
func New(db *sql.DB, opts Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("mysql store: nil db")
	}
	s := &Store{db: db, now: sqlcore.Clock(opts.Now), log: sqlcore.Logger(opts.Logger),
		tries: sqlcore.Tries(opts.ApplyTries), closeDB: opts.CloseDB}
	c, err := sqlcore.NewCore("mysql", txRunner{s}, opts.Now, opts.Logger, opts.ApplyTries, retryable, translate)
	if err != nil {
		return nil, err
	}
	s.shared = shared{Core: c, Reads: sqlcore.NewReads(dialect, sqlcore.SQLDB(db), opts.Now)}
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

// dialect is what the shared read side needs of MySQL / MariaDB.
var dialect = &sqlcore.Dialect[sql.NullTime]{
	Param:       sqlcore.QuestionParam,
	Columns:     columns,
	PayloadSize: "COALESCE(LENGTH(payload), 0)",
	HasBody:     "has_body",
	// The orphan index's column (status = COMMITTED AND NOT has_body).
	ListOrphan:        "orphan_biz IS NOT NULL",
	KeyContains:       "LOCATE(%s, message_key) > 0",
	KeyArg:            func(k string) any { return []byte(k) },
	TimeArg:           func(t time.Time) any { return dt(t) },
	Time:              func(t *sql.NullTime) time.Time { return fromDT(*t) },
	ForUpdate:         " FOR UPDATE",
	OldestPreparedSQL: oldestPreparedSQL,
	OrphanCommitsSQL:  orphanCommitsSQL,
	NoRows:            sql.ErrNoRows,
	Translate:         translate,
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

// ---- reads (sqlcore.Reads) ----

// oldestPreparedSQL reads the index of PREPARED rows (prepared_biz is the
// bizID of PREPARED rows, NULL for the others).
const oldestPreparedSQL = `SELECT prepared_biz, MIN(created_at) FROM eventcenter_messages
	WHERE prepared_biz IS NOT NULL GROUP BY prepared_biz`

// orphanCommitsSQL reads the index of orphan COMMITs (orphan_biz is the
// bizID of COMMITTED rows without a body, NULL for the others): a handful
// of index entries, not the table.
const orphanCommitsSQL = `SELECT orphan_biz, COUNT(*), MIN(created_at) FROM eventcenter_messages
	WHERE orphan_biz IS NOT NULL GROUP BY orphan_biz`

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
		VALUES ` + sqlcore.Values(len(as), 8), args
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
