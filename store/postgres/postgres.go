package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/internal/codec"
	"github.com/eventcenter/eventcenter/store/internal/sqlcore"
)

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

// Store is the PostgreSQL store.Store. Create it with New.
type Store struct {
	// shared: Apply, RetryNowBizID, Get, List, Counts, OldestPrepared,
	// OrphanCommits, Audit, AuditLog.
	shared
	pool *pgxpool.Pool
	now  func() time.Time
	log  *slog.Logger
}

type shared = sqlcore.Store[pgtype.Timestamptz]

var (
	_ store.Store          = (*Store)(nil)
	_ sqlcore.SeqHoldersTx = (*pgTx)(nil)
)

// New returns a store on pool, which the caller owns (Close does not close
// it). New does no I/O; call CheckSchema at start-up.
func New(pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, errors.New("postgres store: nil pool")
	}
	c, err := sqlcore.NewCore("postgres", txRunner{pool}, opts.Now, opts.Logger, opts.ApplyTries, retryable, translate)
	if err != nil {
		return nil, err
	}
	return &Store{shared: shared{Core: c, Reads: sqlcore.NewReads(dialect, pgDB{pool}, opts.Now)}, pool: pool,
		now: sqlcore.Clock(opts.Now), log: sqlcore.Logger(opts.Logger)}, nil
}

// Close does nothing: the pool belongs to the caller.
func (s *Store) Close() error { return nil }

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

// dialect is what the shared read side needs of PostgreSQL.
var dialect = &sqlcore.Dialect[pgtype.Timestamptz]{
	Param:             func(n int) string { return "$" + strconv.Itoa(n) },
	Columns:           columns,
	Extra:             newAheadScan,
	PayloadSize:       "coalesce(octet_length(payload), 0)",
	HasBody:           "has_body",
	ListOrphan:        sqlcore.IsOrphan("NOT has_body"),
	KeyContains:       "strpos(message_key, %s) > 0",
	TimeArg:           func(t time.Time) any { return t },
	Time:              func(t *pgtype.Timestamptz) time.Time { return fromTS(*t) },
	ForUpdate:         " FOR UPDATE",
	OldestPreparedSQL: `SELECT biz_id, min(created_at) FROM eventcenter_messages WHERE ` + sqlcore.IsPrepared() + ` GROUP BY biz_id`,
	OrphanCommitsSQL:  orphanCommitsSQL,
	NoRows:            pgx.ErrNoRows,
	Translate:         translate,
}

// querier is what a pool, a connection and a transaction have in common.
type querier interface {
	Query(ctx context.Context, q string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, q string, args ...any) pgx.Row
}

// pgDB is a sqlcore.DB on a pgx querier.
type pgDB struct{ q querier }

func (d pgDB) Query(ctx context.Context, q string, args ...any) (sqlcore.Rows, error) {
	rows, err := d.q.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (d pgDB) QueryRow(ctx context.Context, q string, args ...any) sqlcore.Row {
	return d.q.QueryRow(ctx, q, args...)
}

// ---- Apply ----

// retryable: a serialization failure, a deadlock or a unique violation.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && slices.Contains([]string{"40001", "40P01", "23505"}, pgErr.Code)
}

// txRunner runs the core's transactions, each on one connection in as few
// round trips as the work allows: BEGIN goes with the first statement (the
// SELECT ... FOR UPDATE of Apply), and COMMIT goes with the writes unless
// there are inserts, whose returned count must be checked first (a
// concurrent insert of the same key makes it short, and then the try is
// rolled back).
type txRunner struct{ pool *pgxpool.Pool }

func (r txRunner) InTx(ctx context.Context, fn func(tx sqlcore.Tx) error) error {
	conn, err := r.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// Release destroys a connection left inside a transaction; the deferred
	// ROLLBACK is for the common case where it can be reused.
	defer conn.Release()
	t := &pgTx{conn: conn}
	done := false
	defer func() {
		if !done && t.begun {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_, _ = conn.Exec(rctx, "ROLLBACK")
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	if t.begun && !t.committed {
		if err := checkCommit(conn.Exec(ctx, "COMMIT")); err != nil {
			return err
		}
	}
	done = true
	return nil
}

// pgTx is one transaction of txRunner.
type pgTx struct {
	conn             *pgxpool.Conn
	begun, committed bool
}

// lookupByKeySQL makes the planner look each key up in the unique index
// (a nested loop over the keys) for the rest of the transaction. A batch
// names at most a few thousand keys, so probes are always cheaper than
// hashing the table; but while the table is small, or grown since its
// statistics, the planner costs a hash join over a sequential scan of
// every row with its payload, which spills past work_mem and takes the
// whole table's time on every batch.
const lookupByKeySQL = `SELECT set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`

var loadSQL = `SELECT ` + columns + ` FROM eventcenter_messages m
	JOIN unnest($1::text[], $2::text[]) AS r(rb, rk) ON m.biz_id = r.rb AND m.message_key = r.rk
	ORDER BY m.id FOR UPDATE OF m`

// queueLoad queues BEGIN, lookupByKeySQL and the SELECT ... FOR UPDATE of
// refs' rows (readLoad reads them).
func queueLoad(b *pgx.Batch, refs []store.MessageRef) {
	bizs := make([]string, len(refs))
	keys := make([]string, len(refs))
	for i, r := range refs {
		bizs[i], keys[i] = r.BizID, r.Key
	}
	b.Queue("BEGIN")
	b.Queue(lookupByKeySQL)
	b.Queue(loadSQL, bizs, keys)
}

// Load sends BEGIN with the SELECT ... FOR UPDATE.
func (t *pgTx) Load(ctx context.Context, refs []store.MessageRef) (map[store.MessageRef]*state.Message, error) {
	var b pgx.Batch
	queueLoad(&b, refs)
	t.begun = true
	br := t.conn.SendBatch(ctx, &b)
	loaded, err := readLoad(br)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return loaded, err
}

// readLoad reads the results queueLoad queued. The rows are fewer than
// the refs, often none (an ingest batch's new messages), so the slice
// grows with them rather than being made to the refs' size.
func readLoad(br pgx.BatchResults) (map[store.MessageRef]*state.Message, error) {
	if _, err := br.Exec(); err != nil { // BEGIN
		return nil, err
	}
	if _, err := br.Exec(); err != nil { // lookupByKeySQL
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	ms, err := dialect.CollectMessages(rows, 0)
	if err != nil {
		return nil, err
	}
	return sqlcore.Keyed(ms), nil
}

// LoadRetryNow implements sqlcore.Tx.
func (t *pgTx) LoadRetryNow(ctx context.Context, bizID string, after int64, limit int) ([]state.Message, error) {
	if !t.begun {
		if _, err := t.conn.Exec(ctx, "BEGIN"); err != nil {
			return nil, err
		}
		t.begun = true
	}
	return dialect.LoadRetryNow(ctx, pgDB{t.conn}, bizID, after, limit)
}

// assignSeqsSQL adds the counts to the queues' counters: the queues as
// arrays, unnested, upserted in sorted order (no deadlock between two
// batches), the new counters returned.
const assignSeqsSQL = `INSERT INTO eventcenter_order_keys (biz_id, order_key, target, topic, last_seq)
		SELECT b, k, t, p, n FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS u(b, k, t, p, n, o)
		ORDER BY o
		` + sqlcore.PostgresUpsert + `, prev_partition = eventcenter_order_keys.last_partition,
			prev_offset = eventcenter_order_keys.last_offset, last_partition = NULL, last_offset = NULL
		RETURNING biz_id, order_key, target, topic, last_seq`

// holdersSQL is Holders' statement: the queues unnested and joined with
// the holders' index, the rows of $5 left out.
var holdersSQL = `SELECT q.b, q.k, q.t, q.p, h.low FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS q(b, k, t, p)
		CROSS JOIN LATERAL (SELECT min(m.order_seq) AS low FROM eventcenter_messages m
			WHERE m.biz_id = q.b AND m.order_key = q.k AND m.target = q.t AND m.topic = q.p AND ` + sqlcore.HoldsOrder("m.") + `
			AND m.id <> ALL($5::bigint[])) h
		WHERE h.low IS NOT NULL`

// seqArgs returns the count per queue of need and assignSeqsSQL's
// parameters.
func seqArgs(need []*state.Message) (map[store.OrderRef]int64, []any) {
	count := map[store.OrderRef]int64{}
	for _, m := range need {
		count[store.OrderOf(m)]++
	}
	qs := sqlcore.Queues(need)
	bizs, keys, targets, topics := queueArrays(qs)
	ns := make([]int64, len(qs))
	for i, q := range qs {
		ns[i] = count[q]
	}
	return count, []any{bizs, keys, targets, topics, ns}
}

func holdersArgs(refs []store.OrderRef, exclude []int64) []any {
	bizs, keys, targets, topics := queueArrays(refs)
	if exclude == nil {
		exclude = []int64{}
	}
	return []any{bizs, keys, targets, topics, exclude}
}

// AssignSeqs implements sqlcore.Tx as sqlcore.SQLOrder does (see there),
// in one statement (assignSeqsSQL).
func (t *pgTx) AssignSeqs(ctx context.Context, need []*state.Message) error {
	count, args := seqArgs(need)
	rows, err := t.conn.Query(ctx, assignSeqsSQL, args...)
	if err != nil {
		return fmt.Errorf("count: %w", err)
	}
	last := make(map[store.OrderRef]int64, len(count))
	if err := readQueueRows(rows, last); err != nil {
		return fmt.Errorf("count: %w", err)
	}
	return sqlcore.Number(need, count, last)
}

// AssignSeqsHolders implements sqlcore.SeqHoldersTx: AssignSeqs and
// Holders in one pipelined batch, run by the server one after the other.
func (t *pgTx) AssignSeqsHolders(ctx context.Context, need []*state.Message, refs []store.OrderRef, exclude []int64) (map[store.OrderRef]int64, error) {
	count, args := seqArgs(need)
	last := make(map[store.OrderRef]int64, len(count))
	low, err := t.countHolders(ctx, &countStmt{sql: assignSeqsSQL, args: args, read: func(rows pgx.Rows) error { return readQueueRows(rows, last) }},
		refs, exclude)
	if err != nil {
		return nil, err
	}
	if err := sqlcore.Number(need, count, last); err != nil {
		return nil, err
	}
	return low, nil
}

// countStmt is a key counters' statement and the reading of its rows.
type countStmt struct {
	sql  string
	args []any
	read func(pgx.Rows) error
}

// countHolders runs count (when not nil) and the holders' read of refs in
// one pipelined batch, which the server runs one after the other: the
// holders are read after the counters are locked. It returns each
// queue's lowest held sequence.
func (t *pgTx) countHolders(ctx context.Context, count *countStmt, refs []store.OrderRef, exclude []int64) (map[store.OrderRef]int64, error) {
	var b pgx.Batch
	if count != nil {
		b.Queue(count.sql, count.args...)
	}
	b.Queue(holdersSQL, holdersArgs(refs, exclude)...)
	br := t.conn.SendBatch(ctx, &b)
	low := map[store.OrderRef]int64{}
	err := func() error {
		if count != nil {
			rows, err := br.Query()
			if err != nil {
				return fmt.Errorf("count: %w", err)
			}
			if err := count.read(rows); err != nil {
				return fmt.Errorf("count: %w", err)
			}
		}
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("read holders: %w", err)
		}
		if err := readQueueRows(rows, low); err != nil {
			return fmt.Errorf("read holders: %w", err)
		}
		return nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return low, nil
}

func queueArrays(qs []store.OrderRef) (bizs, keys, targets, topics []string) {
	bizs, keys = make([]string, len(qs)), make([]string, len(qs))
	targets, topics = make([]string, len(qs)), make([]string, len(qs))
	for i, q := range qs {
		bizs[i], keys[i], targets[i], topics[i] = q.BizID, q.OrderKey, q.Target, q.Topic
	}
	return bizs, keys, targets, topics
}

func readQueueRows(rows pgx.Rows, out map[store.OrderRef]int64) error {
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

// Holders implements sqlcore.Tx in one statement: the queues unnested and
// joined with the holders' index.
func (t *pgTx) Holders(ctx context.Context, refs []store.OrderRef, exclude []int64) (map[store.OrderRef]int64, error) {
	rows, err := t.conn.Query(ctx, holdersSQL, holdersArgs(refs, exclude)...)
	if err != nil {
		return nil, err
	}
	low := map[store.OrderRef]int64{}
	return low, readQueueRows(rows, low)
}

// Wake implements sqlcore.Tx (a statement of its own: no transaction).
func (t *pgTx) Wake(ctx context.Context, ids []int64, now time.Time) (int, error) {
	tag, err := t.conn.Exec(ctx, sqlcore.WakeArraySQL, now, ids, now)
	return int(tag.RowsAffected()), err
}

// wakeSent wakes the next messages of the ordered ones of sent (see
// sqlcore.WakeSQL); a failure leaves them to their park.
func wakeSent(sent []store.Sent, wake func(ids []int64) error) error {
	var ids []int64
	for _, x := range sent {
		if x.Ordered {
			ids = append(ids, x.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := wake(ids); err != nil {
		return fmt.Errorf("wake the next messages of %d order keys: %w", len(ids), err)
	}
	return nil
}

// Write sends the writes, with COMMIT unless there are inserts.
func (t *pgTx) Write(ctx context.Context, loaded map[store.MessageRef]*state.Message, f *store.Folded) error {
	var b pgx.Batch
	queueWrites(&b, loaded, f)
	commitInBatch := len(f.Inserts) == 0
	if commitInBatch {
		b.Queue("COMMIT")
	}
	br := t.conn.SendBatch(ctx, &b)
	err := readWrites(br, f)
	if err == nil && commitInBatch {
		err = checkCommit(br.Exec())
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write messages: %w", cerr)
	}
	t.committed = err == nil && commitInBatch
	return err
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
// sqlcore.ErrInsertRace), the updates and the audit rows.
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
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("insert messages: %w", err)
		}
		n, err := sqlcore.SetIDs(rows, sqlcore.ByRef(f.Inserts))
		if err != nil {
			return fmt.Errorf("insert messages: %w", err)
		}
		if n < len(f.Inserts) {
			return fmt.Errorf("insert messages: %d of %d keys exist: %w", len(f.Inserts)-n, len(f.Inserts), sqlcore.ErrInsertRace)
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
//     53 ms claim (a sequential scan and an on-disk sort), in every claim.
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
	RETURNING ` + columns
}

// pendingSendByID is "a committed message with a body, not sent yet" for
// statements that find their rows by id: "has_body IS TRUE" means what
// "has_body" means (the column is NOT NULL), but the planner cannot prove
// the predicate of the partial index send_due from it, so it never reads
// the rows through that index (see markSentSQL and claimSQL).
var pendingSendByID = sqlcore.PendingSend("has_body IS TRUE")

// claimSendsSQL is the send claim without fair claims or order keys.
var claimSendsSQL = claimSQL("send_next_at = $1, lease_token = $2",
	sqlcore.PendingSend("has_body")+" AND send_next_at <= $4",
	pendingSendByID+" AND send_next_at <= $4",
	"send_next_at")

// claimOrderedSendsSQL is claimSendsSQL that skips the messages held back
// by their order key (Claim.Ordered): in the index walk, so that a long
// queue behind a blocked key does not fill the candidates, and again under
// the lock.
var claimOrderedSendsSQL = claimSQL("send_next_at = $1, lease_token = $2",
	sqlcore.PendingSend("has_body")+" AND send_next_at <= $4 AND "+orderFree("eventcenter_messages"),
	pendingSendByID+" AND send_next_at <= $4 AND "+orderFree("eventcenter_messages"),
	"send_next_at")

// ClaimSends implements store.Store.
func (s *Store) ClaimSends(ctx context.Context, c store.Claim) ([]state.Message, error) {
	var ms []state.Message
	var err error
	switch {
	case c.FairSends != nil:
		ms, err = s.claimFair(ctx, c)
	case c.Ordered:
		ms, err = s.claim(ctx, "claim sends", c, claimOrderedSendsSQL)
	default:
		return s.claim(ctx, "claim sends", c, claimSendsSQL)
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
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = dialect.ClaimRuns(ctx, pgDB{tx}, heads, c, codec.Time(s.now()))
		return err
	})
	if err != nil {
		s.log.Warn("lease the runs behind claimed order keys failed; sending their heads alone", "err", translate(err))
		return heads
	}
	return out
}

// ClaimCheckbacks implements store.Store. Both claims, fair or oldest
// due first, read the bizIDs' due rows from one index
// (claimFairCheckbacks): a second index of the PREPARED rows by partition
// cost every PREPARE and every check-back claim an index entry.
func (s *Store) ClaimCheckbacks(ctx context.Context, c store.Claim) ([]state.Message, error) {
	return s.claimFairCheckbacks(ctx, c)
}

func (s *Store) claim(ctx context.Context, what string, c store.Claim, q string) ([]state.Message, error) {
	return sqlcore.Claim(c, func() ([]state.Message, error) {
		now := codec.Time(s.now())
		ms, err := dialect.Messages(ctx, pgDB{s.pool}, q, now.Add(c.Lease), codec.LeaseToken(), c.Partitions, now, c.Limit)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, translate(err))
		}
		return ms, nil
	})
}

// markSentSQL looks the rows up by id and nothing else: no join, so no
// plan can run one side once per row of the other. It was an UPDATE … FROM
// unnest(ids, refs) joined on id; on a table never analyzed (autovacuum off,
// or the first minute of a new table) the planner estimated one pending row,
// put a sequential scan outside a nested loop and scanned the 500 ids once
// per pending row: 0.5–3 s per statement at 5,000–20,000 rows, which held
// the forwarder to 500 msg/s during a burst. The references come
// as a JSON object keyed by id, looked up per row.
//
// It says "has_body IS TRUE", not "has_body" (the same for this NOT NULL
// column), on purpose: with the latter the WHERE clause implies the
// predicate of the partial index send_due, and the planner may read the
// batch through that index, whose entries for already-sent rows pile up
// until the next vacuum (measured: 25 ms and growing per 500 marks; a 9,000
// msg/s run fell to 4,000 msg/s). TestMarkSentPlanUsesThePrimaryKey and
// TestMarkSentPlanOnATableNeverAnalyzed check the plans.
var markSentSQL = `UPDATE eventcenter_messages SET ` + sqlcore.MarkSentSet(sqlcore.Plain, "$1", "coalesce($3::jsonb ->> id::text, '')") + `
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
	now := codec.Time(s.now())
	if _, err := s.pool.Exec(ctx, markSentSQL, now, ids, sentRefs(sent)); err != nil {
		return fmt.Errorf("mark sent: %w", translate(err))
	}
	return wakeSent(sent, func(ids []int64) error {
		_, err := s.pool.Exec(ctx, sqlcore.WakeArraySQL, now, ids, now)
		return translate(err)
	})
}

// claimNextSQL leases the heads of the queues of the sent ids $3 that
// are free to go on the partitions $4 (store.NextClaimer), and wakes the
// others: $1 is the new due time (the lease), $2 the lease token, $5 now.
// A head is pending and never tried; on an owned partition it is leased
// if it is parked or past its lease, elsewhere it is made due now if it
// is parked and unleased (sqlcore.WakeArraySQL: a head being sent is left
// alone). A head on an owned partition that the lease does not take is
// one the wake would not move either, so one statement does both, with
// one look-up of each head (they were two, each looking every head up);
// the caller tells the leased rows from the woken ones by their
// partition. It runs after markSentSQL committed, so the sent rows no
// longer hold their keys.
var claimNextSQL = `UPDATE eventcenter_messages SET
		send_next_at = CASE WHEN partition = ANY($4::int[]) THEN $1 ELSE $5 END,
		lease_token = CASE WHEN partition = ANY($4::int[]) THEN $2 ELSE lease_token END
	WHERE id = ANY(ARRAY(SELECT DISTINCT ` + sqlcore.HeadOf("s") + ` FROM eventcenter_messages s
		WHERE s.id = ANY($3::bigint[]) AND s.order_key <> ''))
	AND ` + pendingSendByID + ` AND send_attempts = 0 AND ` + predConfirmed("eventcenter_messages") + `
	AND CASE WHEN partition = ANY($4::int[]) THEN lease_token = 0 OR send_next_at <= $5
		ELSE lease_token = 0 AND send_next_at > $5 END
	RETURNING ` + columns

// MarkSentClaimNext implements store.NextClaimer in one round trip: the
// sent marks in a transaction of their own, then the leases of the next
// messages and the wake of the others (claimNextSQL). The marks must be
// committed before the next messages are looked for: a batch that parks a
// message behind one of them and commits meanwhile looks again after its
// commit (its wake), and one of the two must see the other's commit.
func (s *Store) MarkSentClaimNext(ctx context.Context, sent []store.Sent, c store.Claim) ([]state.Message, int, error) {
	var ids, ordered []int64
	for _, x := range sent {
		ids = append(ids, x.ID)
		if x.Ordered {
			ordered = append(ordered, x.ID)
		}
	}
	if len(ordered) == 0 || len(c.Partitions) == 0 || c.Lease <= 0 {
		// The marks wake the next messages; how many is not counted.
		return nil, len(ordered), s.MarkSent(ctx, sent)
	}
	now := codec.Time(s.now())
	var b pgx.Batch
	b.Queue("BEGIN")
	b.Queue(markSentSQL, now, ids, sentRefs(sent))
	b.Queue("COMMIT")
	b.Queue(claimNextSQL, now.Add(c.Lease), codec.LeaseToken(), ordered, c.Partitions, now)
	br := s.pool.SendBatch(ctx, &b)
	ms, err := readClaimNext(br)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, 0, fmt.Errorf("mark sent and claim the next messages: %w", translate(err))
	}
	leased := ms[:0]
	woken := 0
	for _, m := range ms {
		if slices.Contains(c.Partitions, m.Partition) {
			leased = append(leased, m)
		} else {
			woken++
		}
	}
	if len(leased) > 0 {
		c.Ordered = true
		c.Limit = max(c.Limit, len(leased))
		leased = s.claimRuns(ctx, leased, c)
	}
	return leased, woken, nil
}

func readClaimNext(br pgx.BatchResults) ([]state.Message, error) {
	if _, err := br.Exec(); err != nil { // BEGIN
		return nil, err
	}
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	if err := checkCommit(br.Exec()); err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	return dialect.CollectMessages(rows, 0)
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

// ---- reads (the others are sqlcore.Reads) ----

// orphanCommitsSQL is OrphanCommits' statement. The partial index
// eventcenter_messages_orphan_commits holds only orphan rows, so it reads a
// handful of index entries, not the table.
var orphanCommitsSQL = `SELECT biz_id, count(*), min(created_at) FROM eventcenter_messages
	WHERE ` + sqlcore.IsOrphan("NOT has_body") + ` GROUP BY biz_id`

// AddAudit implements store.Store.
func (s *Store) AddAudit(ctx context.Context, e store.AuditEntry) error {
	if _, err := s.pool.Exec(ctx, insertAuditSQL, auditArgs([]store.AuditEntry{e})...); err != nil {
		return fmt.Errorf("add audit for %s:%s: %w", e.BizID, e.Key, translate(err))
	}
	return nil
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

var purgeSQL = `WITH gone AS (
		DELETE FROM eventcenter_messages WHERE id IN (
			SELECT id FROM eventcenter_messages
			WHERE (` + sqlcore.PurgeRolledBack("$1") + `) OR (` + sqlcore.PurgeSent("$1") + `)
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
