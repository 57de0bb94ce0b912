package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

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
	// insert of the same key, a deadlock or a serialization failure; 0
	// means 5.
	ApplyTries int
}

func (o *Options) validate() error {
	if o.ApplyTries < 0 {
		return errors.New("postgres options: ApplyTries must not be negative")
	}
	return nil
}

// Store is the PostgreSQL store.Store. Create it with New.
type Store struct {
	pool  *pgxpool.Pool
	now   func() time.Time
	log   *slog.Logger
	tries int
}

var _ store.Store = (*Store)(nil)

// New returns a store on pool, which the caller owns (Close does not close
// it). New does no I/O; call CheckSchema at start-up.
func New(pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, errors.New("postgres store: nil pool")
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &Store{pool: pool, now: opts.Now, log: opts.Logger, tries: opts.ApplyTries}
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

// Close does nothing: the pool belongs to the caller.
func (s *Store) Close() error { return nil }

// Migrate applies the embedded migrations not yet applied, in one
// transaction under an advisory lock (several instances may run it at once),
// in the schema the pool's search_path selects.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('eventcenter_migrate:' || current_schema()))`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migrate.Table+` (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var cur int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+migrate.Table).Scan(&cur); err != nil {
			return err
		}
		for _, m := range ms {
			if m.Version <= cur {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d %s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+migrate.Table+` (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return fmt.Errorf("migration %d %s: %w", m.Version, m.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	return nil
}

// CheckSchema returns an error wrapping store.ErrNotMigrated when the
// schema is missing or older than this binary's migrations.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("check schema: %w", translate(err))
	}
	want := migrate.Latest(ms)
	var cur int
	err = pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+migrate.Table).Scan(&cur)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		return fmt.Errorf("check schema: no %s table: %w", migrate.Table, store.ErrNotMigrated)
	}
	if err != nil {
		return fmt.Errorf("check schema: %w", translate(err))
	}
	if cur < want {
		return fmt.Errorf("check schema: version %d, this binary needs %d: %w", cur, want, store.ErrNotMigrated)
	}
	return nil
}

// CheckSchema is the package function on the store's pool. It also warns
// when the pool was not set up with ConfigurePool.
func (s *Store) CheckSchema(ctx context.Context) error {
	if err := CheckSchema(ctx, s.pool); err != nil {
		return err
	}
	var mode string
	if err := s.pool.QueryRow(ctx, `SELECT current_setting('plan_cache_mode')`).Scan(&mode); err != nil {
		return fmt.Errorf("check schema: read plan_cache_mode: %w", translate(err))
	}
	if mode != planCacheMode {
		s.log.Warn("PostgreSQL plan_cache_mode is not "+planCacheMode+": plans made while the table was small may be kept as it grows (open the pool with postgres.ConfigurePool)",
			"plan_cache_mode", mode)
	}
	return nil
}

// ---- row mapping ----

func ts(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()} }

func fromTS(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

func scanMessage(row pgx.Row) (state.Message, error) {
	var m state.Message
	var headers []byte
	var st, sst int16
	var vna, sna, ca, ua, da, sa pgtype.Timestamptz
	var va, sendA, conf int32
	err := row.Scan(&m.ID, &m.BizID, &m.Key, &m.Partition, &st, &m.HasBody, &m.Payload, &headers,
		&m.Target, &m.Topic, &m.ForwardKey, &m.Tag, &m.Verify, &va, &vna,
		&sst, &sendA, &sna, &m.SendRef, &m.LeaseToken, &m.LastError, &conf,
		&ca, &ua, &da, &sa)
	if err != nil {
		return m, err
	}
	m.Status, m.SendStatus = state.Status(st), state.SendStatus(sst)
	m.VerifyAttempts, m.SendAttempts, m.Conflicts = int(va), int(sendA), int(conf)
	m.VerifyNextAt, m.SendNextAt = fromTS(vna), fromTS(sna)
	m.CreatedAt, m.UpdatedAt, m.DecidedAt, m.SentAt = fromTS(ca), fromTS(ua), fromTS(da), fromTS(sa)
	if m.Headers, err = codec.DecodeHeaders(headers); err != nil {
		return m, fmt.Errorf("message %d: %w", m.ID, err)
	}
	return m, nil
}

func collectMessages(rows pgx.Rows) ([]state.Message, error) {
	defer rows.Close()
	var ms []state.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	return ms, rows.Err()
}

// ---- Apply ----

// errInsertRace: another transaction inserted one of our new keys.
var errInsertRace = errors.New("concurrent insert of the same message")

func retryable(err error) bool {
	if errors.Is(err, errInsertRace) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "40001", "40P01", "23505": // serialization failure, deadlock, unique violation
			return true
		}
	}
	return false
}

// Apply implements store.Store.
func (s *Store) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	if len(req.Changes) == 0 {
		return store.ApplyResult{}, nil
	}
	refs := store.Refs(req.Changes)
	bizs := make([]string, len(refs))
	keys := make([]string, len(refs))
	for i, r := range refs {
		bizs[i], keys[i] = r.BizID, r.Key
	}
	for attempt := 1; ; attempt++ {
		res, err := s.applyOnce(ctx, req, bizs, keys)
		if err == nil {
			return res, nil
		}
		if !retryable(err) || attempt >= s.tries || ctx.Err() != nil {
			return store.ApplyResult{}, fmt.Errorf("apply (try %d): %w", attempt, translate(err))
		}
		s.log.Debug("retrying store apply", "try", attempt, "err", err)
	}
}

// applyOnce is one try of Apply: one transaction on one connection, in as
// few round trips as the work allows. BEGIN goes with the SELECT ... FOR
// UPDATE; COMMIT goes with the writes unless there are inserts, whose
// returned count must be checked first (a concurrent insert of the same key
// makes it short, and then the try is rolled back).
func (s *Store) applyOnce(ctx context.Context, req store.ApplyRequest, bizs, keys []string) (res store.ApplyResult, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return res, err
	}
	// Release destroys a connection left inside a transaction; the deferred
	// ROLLBACK is for the common case where it can be reused.
	defer conn.Release()
	done := false
	defer func() {
		if !done {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_, _ = conn.Exec(rctx, "ROLLBACK")
		}
	}()

	var b pgx.Batch
	b.Queue("BEGIN")
	b.Queue(loadSQL, bizs, keys)
	br := conn.SendBatch(ctx, &b)
	loaded, err := readLoad(br)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("load messages: %w", err)
	}

	f := store.Fold(loaded, req.Changes)
	codec.Prepare(ctx, &f, s.now(), req)

	b = pgx.Batch{}
	queueWrites(&b, loaded, &f)
	commitInBatch := len(f.Inserts) == 0
	if commitInBatch {
		b.Queue("COMMIT")
	}
	br = conn.SendBatch(ctx, &b)
	err = readWrites(br, &f)
	if err == nil && commitInBatch {
		err = checkCommit(br.Exec())
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write messages: %w", cerr)
	}
	if err == nil && !commitInBatch {
		err = checkCommit(conn.Exec(ctx, "COMMIT"))
	}
	if err != nil {
		return res, err
	}
	done = true
	return codec.Result(&f), nil
}

func checkCommit(tag pgconn.CommandTag, err error) error {
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if tag.String() != "COMMIT" {
		return fmt.Errorf("commit: transaction was rolled back (%s)", tag)
	}
	return nil
}

const loadSQL = `SELECT ` + codec.Columns + ` FROM eventcenter_messages m
	JOIN unnest($1::text[], $2::text[]) AS r(rb, rk) ON m.biz_id = r.rb AND m.message_key = r.rk
	ORDER BY m.id FOR UPDATE OF m`

func readLoad(br pgx.BatchResults) (map[store.MessageRef]*state.Message, error) {
	if _, err := br.Exec(); err != nil { // BEGIN
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	ms, err := collectMessages(rows)
	if err != nil {
		return nil, err
	}
	loaded := make(map[store.MessageRef]*state.Message, len(ms))
	for i := range ms {
		loaded[store.MessageRef{BizID: ms[i].BizID, Key: ms[i].Key}] = &ms[i]
	}
	return loaded, nil
}

const insertAuditSQL = `INSERT INTO eventcenter_audit (biz_id, message_key, action, who, reason, at, status_before, status_after)
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::text[])`

func auditArgs(as []store.AuditEntry) []any {
	n := len(as)
	bizs, keys, actions, whos, reasons := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ats := make([]pgtype.Timestamptz, n)
	befores, afters := make([]string, n), make([]string, n)
	for i, a := range as {
		bizs[i], keys[i], actions[i], whos[i], reasons[i] = a.BizID, a.Key, a.Action, a.Who, a.Reason
		ats[i], befores[i], afters[i] = ts(a.At), a.Before, a.After
	}
	return []any{bizs, keys, actions, whos, reasons, ats, befores, afters}
}

// queueWrites queues the statements writing a Fold result: the inserts
// (readWrites reports a concurrent insert of the same key as
// errInsertRace), the updates and the audit rows.
func queueWrites(b *pgx.Batch, loaded map[store.MessageRef]*state.Message, f *store.Folded) {
	if len(f.Inserts) > 0 {
		q, args := insertStmt(f.Inserts)
		b.Queue(q, args...)
	}
	if len(f.Updates) > 0 {
		q, args := updateStmt(f.Updates, loaded)
		b.Queue(q, args...)
	}
	if len(f.Audits) > 0 {
		b.Queue(insertAuditSQL, auditArgs(f.Audits)...)
	}
}

func readWrites(br pgx.BatchResults, f *store.Folded) error {
	if len(f.Inserts) > 0 {
		byRef := make(map[store.MessageRef]*state.Message, len(f.Inserts))
		for _, m := range f.Inserts {
			byRef[store.MessageRef{BizID: m.BizID, Key: m.Key}] = m
		}
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("insert messages: %w", err)
		}
		n := 0
		var id int64
		var r store.MessageRef
		_, err = pgx.ForEachRow(rows, []any{&id, &r.BizID, &r.Key}, func() error {
			if m := byRef[r]; m != nil {
				m.ID = id
				n++
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("insert messages: %w", err)
		}
		if n < len(f.Inserts) {
			return fmt.Errorf("insert messages: %d of %d keys exist: %w", len(f.Inserts)-n, len(f.Inserts), errInsertRace)
		}
	}
	if len(f.Updates) > 0 {
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("update messages: %w", err)
		}
		if tag.RowsAffected() != int64(len(f.Updates)) {
			return fmt.Errorf("update messages: %d of %d rows updated", tag.RowsAffected(), len(f.Updates))
		}
	}
	if len(f.Audits) > 0 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("insert audit: %w", err)
		}
	}
	return nil
}

// ---- claims and sends ----

// claimSQL builds a claim: the due rows of the given partitions, oldest
// due first, at most $5, set by set and returned. Parameters: $1 the new
// due time (the lease), $2 the lease token, $3 the partitions, $4 now, $5
// the limit. due selects the due rows and implies the predicate of the
// partial index that lists them; recheck is the same condition written so
// that it does not.
//
// Three steps, each pinned to one access path:
//  1. The candidates, partition by partition: a LATERAL subquery per
//     partition reads the partial index (partition, due time) in order and
//     stops at the limit; the candidates are then merged by due time. One
//     ORDER BY over "partition = ANY(...)" cannot read that index in due
//     order, so it read and sorted every due row of the owned partitions
//     to take the first thousand: with 100,000 stale prepares, 40 ms of a
//     53 ms claim (a sequential scan and an on-disk sort), in every claim
//     (issue 14).
//  2. The candidates are locked by id, skipping rows another transaction
//     holds, and checked again under the lock (recheck). Looked up by id
//     only: on a table never analyzed the planner thinks one row is due
//     and, given a predicate that implies the partial index, reads every
//     due row and joins the candidates once per row (measured: 40,000 due
//     rows × 100 candidates, 1.3 s).
//  3. The locked rows are updated, by id.
//
// TestClaimPlansReadThePartialIndexInOrder checks the plans.
func claimSQL(set, due, recheck, col string) string {
	return `UPDATE eventcenter_messages SET ` + set + `
	WHERE id = ANY(ARRAY(SELECT id FROM eventcenter_messages
		WHERE id = ANY(ARRAY(SELECT c.id FROM unnest($3::int[]) AS p(part)
			CROSS JOIN LATERAL (SELECT id, ` + col + ` FROM eventcenter_messages
				WHERE partition = p.part AND ` + due + `
				ORDER BY ` + col + ` LIMIT $5) c
			ORDER BY c.` + col + ` LIMIT $5))
		AND ` + recheck + `
		FOR UPDATE SKIP LOCKED))
	RETURNING ` + codec.Columns
}

// pendingSendByID is "a committed message with a body, not sent yet" for
// statements that find their rows by id: "has_body IS TRUE" means what
// "has_body" means (the column is NOT NULL), but the planner cannot prove
// the predicate of the partial index send_due from it, so it never reads
// the rows through that index (see markSentSQL and claimSQL).
const pendingSendByID = `status = 2 AND send_status = 0 AND has_body IS TRUE`

// "(status = 1) IS TRUE" is to the check-back index what pendingSendByID
// is to send_due.
var claimSendsSQL = claimSQL("send_next_at = $1, lease_token = $2",
	"status = 2 AND send_status = 0 AND has_body AND send_next_at <= $4",
	pendingSendByID+" AND send_next_at <= $4",
	"send_next_at")

// claimCheckbacksSQL counts the attempt each claim is for (state.ClaimCheckback):
// a call whose center dies before its answer is written still counts.
var claimCheckbacksSQL = claimSQL("verify_next_at = $1, lease_token = $2, verify_attempts = verify_attempts + 1",
	"status = 1 AND verify_next_at <= $4",
	"(status = 1) IS TRUE AND verify_next_at <= $4",
	"verify_next_at")

// ClaimSends implements store.Store.
func (s *Store) ClaimSends(ctx context.Context, c store.Claim) ([]state.Message, error) {
	return s.claim(ctx, "claim sends", c, claimSendsSQL)
}

// ClaimCheckbacks implements store.Store.
func (s *Store) ClaimCheckbacks(ctx context.Context, c store.Claim) ([]state.Message, error) {
	return s.claim(ctx, "claim checkbacks", c, claimCheckbacksSQL)
}

func (s *Store) claim(ctx context.Context, what string, c store.Claim, q string) ([]state.Message, error) {
	if err := codec.CheckClaim(c); err != nil {
		return nil, err
	}
	if len(c.Partitions) == 0 {
		return nil, nil
	}
	now := codec.Time(s.now())
	rows, err := s.pool.Query(ctx, q, now.Add(c.Lease), codec.LeaseToken(), c.Partitions, now, c.Limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, translate(err))
	}
	ms, err := collectMessages(rows)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, translate(err))
	}
	return ms, nil
}

// markSentSQL looks the rows up by id and nothing else: no join, so no
// plan can run one side once per row of the other. It was an UPDATE … FROM
// unnest(ids, refs) joined on id; on a table never analyzed (autovacuum off,
// or the first minute of a new table) the planner estimated one pending row,
// put a sequential scan outside a nested loop and scanned the 500 ids once
// per pending row: 0.5–3 s per statement at 5,000–20,000 rows, which held
// the forwarder to 500 msg/s during a burst (issue 14). The references come
// as a JSON object keyed by id, looked up per row.
//
// It says "has_body IS TRUE", not "has_body" (the same for this NOT NULL
// column), on purpose: with the latter the WHERE clause implies the
// predicate of the partial index send_due, and the planner may read the
// batch through that index, whose entries for already-sent rows pile up
// until the next vacuum (measured: 25 ms and growing per 500 marks; a 9,000
// msg/s run fell to 4,000 msg/s). TestMarkSentPlanUsesThePrimaryKey and
// TestMarkSentPlanOnATableNeverAnalyzed check the plans.
const markSentSQL = `UPDATE eventcenter_messages SET send_status = 1, sent_at = $1, updated_at = $1,
		send_ref = coalesce($3::jsonb ->> id::text, '')
	WHERE id = ANY($2::bigint[]) AND ` + pendingSendByID

// MarkSent implements store.Store.
func (s *Store) MarkSent(ctx context.Context, sent []store.Sent) error {
	if len(sent) == 0 {
		return nil
	}
	ids := make([]int64, len(sent))
	for i, x := range sent {
		ids[i] = x.ID
	}
	if _, err := s.pool.Exec(ctx, markSentSQL, codec.Time(s.now()), ids, sentRefs(sent)); err != nil {
		return fmt.Errorf("mark sent: %w", translate(err))
	}
	return nil
}

// sentRefs returns the references of sent as a JSON object keyed by id.
func sentRefs(sent []store.Sent) string {
	b := make([]byte, 0, len(sent)*40)
	b = append(b, '{')
	for i, x := range sent {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, x.ID, 10)
		b = append(b, '"', ':')
		b = appendJSONString(b, x.Ref)
	}
	return string(append(b, '}'))
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ---- reads ----

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, bizID, key string) (state.Message, error) {
	m, err := scanMessage(s.pool.QueryRow(ctx, `SELECT `+codec.Columns+` FROM eventcenter_messages
		WHERE biz_id = $1 AND message_key = $2`, bizID, key))
	if errors.Is(err, pgx.ErrNoRows) {
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
		args = append(args, a)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if after > 0 {
		add("id < $%d", after)
	}
	if f.BizID != "" {
		add("biz_id = $%d", f.BizID)
	}
	if f.Status != state.None {
		add("status = $%d", int16(f.Status))
	}
	if f.SendStatus != nil {
		add("send_status = $%d", int16(*f.SendStatus))
	}
	if f.KeyContains != "" {
		add("strpos(message_key, $%d) > 0", f.KeyContains)
	}
	if !f.CreatedBefore.IsZero() {
		add("created_at < $%d", f.CreatedBefore)
	}
	if f.Orphan {
		where = append(where, "status = 2 AND NOT has_body")
	}
	q := `SELECT ` + codec.Columns + ` FROM eventcenter_messages`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, limit+1)
	q += fmt.Sprintf(" ORDER BY id DESC LIMIT $%d", len(args))
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return store.Page{}, fmt.Errorf("list: %w", translate(err))
	}
	ms, err := collectMessages(rows)
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
	rows, err := s.pool.Query(ctx, `SELECT biz_id, status, send_status, count(*) FROM eventcenter_messages
		GROUP BY biz_id, status, send_status ORDER BY biz_id, status, send_status`)
	if err != nil {
		return nil, fmt.Errorf("counts: %w", translate(err))
	}
	var cs []store.Count
	var c store.Count
	var st, sst int16
	_, err = pgx.ForEachRow(rows, []any{&c.BizID, &st, &sst, &c.N}, func() error {
		c.Status, c.SendStatus = state.Status(st), state.SendStatus(sst)
		cs = append(cs, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("counts: %w", translate(err))
	}
	return cs, nil
}

// OldestPrepared implements store.Store.
func (s *Store) OldestPrepared(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT biz_id, min(created_at) FROM eventcenter_messages
		WHERE status = 1 GROUP BY biz_id`)
	if err != nil {
		return nil, fmt.Errorf("oldest prepared: %w", translate(err))
	}
	out := map[string]time.Time{}
	var biz string
	var at pgtype.Timestamptz
	_, err = pgx.ForEachRow(rows, []any{&biz, &at}, func() error {
		out[biz] = fromTS(at)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("oldest prepared: %w", translate(err))
	}
	return out, nil
}

const orphanCommitsSQL = `SELECT biz_id, count(*), min(created_at) FROM eventcenter_messages
	WHERE status = 2 AND NOT has_body GROUP BY biz_id`

// OrphanCommits implements store.Store. The partial index
// eventcenter_messages_orphan_commits holds only orphan rows, so this reads
// a handful of index entries, not the table.
func (s *Store) OrphanCommits(ctx context.Context) (map[string]store.OrphanStat, error) {
	rows, err := s.pool.Query(ctx, orphanCommitsSQL)
	if err != nil {
		return nil, fmt.Errorf("orphan commits: %w", translate(err))
	}
	out := map[string]store.OrphanStat{}
	var biz string
	var n int64
	var at pgtype.Timestamptz
	_, err = pgx.ForEachRow(rows, []any{&biz, &n, &at}, func() error {
		out[biz] = store.OrphanStat{N: n, Oldest: fromTS(at)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("orphan commits: %w", translate(err))
	}
	return out, nil
}

// AddAudit implements store.Store.
func (s *Store) AddAudit(ctx context.Context, e store.AuditEntry) error {
	if _, err := s.pool.Exec(ctx, insertAuditSQL, auditArgs([]store.AuditEntry{e})...); err != nil {
		return fmt.Errorf("add audit for %s:%s: %w", e.BizID, e.Key, translate(err))
	}
	return nil
}

// Audit implements store.Store.
func (s *Store) Audit(ctx context.Context, bizID, key string) ([]store.AuditEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT biz_id, message_key, action, who, reason, at, status_before, status_after
		FROM eventcenter_audit WHERE biz_id = $1 AND message_key = $2 ORDER BY id`, bizID, key)
	if err != nil {
		return nil, fmt.Errorf("audit %s:%s: %w", bizID, key, translate(err))
	}
	var out []store.AuditEntry
	var a store.AuditEntry
	var at pgtype.Timestamptz
	_, err = pgx.ForEachRow(rows, []any{&a.BizID, &a.Key, &a.Action, &a.Who, &a.Reason, &at, &a.Before, &a.After}, func() error {
		a.At = fromTS(at)
		out = append(out, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit %s:%s: %w", bizID, key, translate(err))
	}
	return out, nil
}

// AuditLog implements store.Store.
func (s *Store) AuditLog(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, error) {
	if q.Limit <= 0 {
		return nil, errors.New("audit log: limit must be positive")
	}
	var since any
	if !q.Since.IsZero() {
		since = q.Since
	}
	rows, err := s.pool.Query(ctx, `SELECT id, biz_id, message_key, action, who, reason, at, status_before, status_after
		FROM eventcenter_audit WHERE ($1 = '' OR biz_id = $1) AND ($2::bigint <= 0 OR id < $2)
		AND ($3::timestamptz IS NULL OR at >= $3) ORDER BY id DESC LIMIT $4`, q.BizID, q.BeforeID, since, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", translate(err))
	}
	var out []store.AuditEntry
	var a store.AuditEntry
	var at pgtype.Timestamptz
	_, err = pgx.ForEachRow(rows, []any{&a.ID, &a.BizID, &a.Key, &a.Action, &a.Who, &a.Reason, &at, &a.Before, &a.After}, func() error {
		a.At = fromTS(at)
		out = append(out, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", translate(err))
	}
	return out, nil
}

// PurgeAudit implements store.Store.
func (s *Store) PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, errors.New("purge audit: limit must be positive")
	}
	// In id order, which follows time: the scan stops after limit rows.
	tag, err := s.pool.Exec(ctx, `DELETE FROM eventcenter_audit WHERE id IN (
		SELECT id FROM eventcenter_audit WHERE at < $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("purge audit: %w", translate(err))
	}
	return int(tag.RowsAffected()), nil
}

// ---- operator bulk actions and retention ----

// retryNowChunk is how many messages one RetryNowBizID transaction resets.
const retryNowChunk = 500

// retryNowSQL selects one chunk of the rows store.RetryNowEligible names.
var retryNowSQL = `SELECT ` + codec.Columns + ` FROM eventcenter_messages
	WHERE biz_id = $1 AND id > $2 AND ` + store.RetryNowWhere("has_body") + `
	ORDER BY id LIMIT $3 FOR UPDATE`

// RetryNowBizID implements store.Store.
func (s *Store) RetryNowBizID(ctx context.Context, bizID string, who store.Actor) (int, error) {
	total := 0
	var lastID int64
	for {
		n := 0
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, retryNowSQL, bizID, lastID, retryNowChunk)
			if err != nil {
				return err
			}
			ms, err := collectMessages(rows)
			if err != nil {
				return err
			}
			n = len(ms)
			if n == 0 {
				return nil
			}
			lastID = ms[n-1].ID
			now := s.now()
			loaded := make(map[store.MessageRef]*state.Message, n)
			changes := make([]store.Change, n)
			for i := range ms {
				m := &ms[i]
				loaded[store.MessageRef{BizID: m.BizID, Key: m.Key}] = m
				a := who
				changes[i] = store.Change{BizID: m.BizID, Key: m.Key, Partition: m.Partition,
					Event: state.Event{Kind: state.KindRetryNow, At: now}, Audit: &a}
			}
			f := store.Fold(loaded, changes)
			codec.Prepare(ctx, &f, now, store.ApplyRequest{})
			var b pgx.Batch
			queueWrites(&b, loaded, &f)
			br := tx.SendBatch(ctx, &b)
			err = readWrites(br, &f)
			if cerr := br.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			total += len(f.Updates)
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("retry now %s: %w", bizID, translate(err))
		}
		if n < retryNowChunk {
			return total, nil
		}
	}
}

const purgeSQL = `WITH gone AS (
		DELETE FROM eventcenter_messages WHERE id IN (
			SELECT id FROM eventcenter_messages
			WHERE (status = 3 AND decided_at < $1) OR (status = 2 AND send_status = 1 AND sent_at < $1)
			LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING biz_id, message_key
	)
	SELECT count(*) FROM gone`

// Purge implements store.Store.
func (s *Store) Purge(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, errors.New("purge: limit must be positive")
	}
	var n int
	if err := s.pool.QueryRow(ctx, purgeSQL, before, limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("purge: %w", translate(err))
	}
	return n, nil
}
