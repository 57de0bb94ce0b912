package inbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/twmb/franz-go/pkg/kgo"
)

// HeaderID is the Kafka header / RocketMQ property holding a forwarded
// message's id "bizID:messageKey": envelope.HeaderID, named here for
// consumers of the inbox.
const HeaderID = envelope.HeaderID

// Limits on what the inbox stores, in bytes (the MySQL schema's column
// sizes). A forwarded ec-id is at most 64 + 1 + 255 bytes.
const (
	MaxIDLen    = 320
	MaxGroupLen = 255
)

// ErrNoID is returned for a message without an ec-id (not forwarded by
// eventcenter, or its header was stripped).
var ErrNoID = errors.New("inbox: message has no ec-id")

// Dialect is the SQL dialect of the consumer's database.
type Dialect int

const (
	// Postgres is PostgreSQL 11 or later.
	Postgres Dialect = iota + 1
	// MySQL is MySQL 8.0 or later, or MariaDB 10.6 or later.
	MySQL
)

// String returns "postgres" or "mysql".
func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "postgres"
	case MySQL:
		return "mysql"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// Execer runs a statement. *sql.Tx, *sql.Conn and *sql.DB implement it;
// Pgx adapts pgx's transactions and connections.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Option configures an Inbox. Options are built only by this package's
// With... functions.
type Option interface{ apply(*Inbox) }

type optionFunc func(*Inbox)

func (f optionFunc) apply(b *Inbox) { f(b) }

// WithClock sets the clock that stamps received_at and that Purge measures
// age against (default time.Now).
func WithClock(now func() time.Time) Option { return optionFunc(func(b *Inbox) { b.now = now }) }

// Inbox records the ids of the messages a consumer group has applied.
// It holds no state of its own besides its configuration and is safe for
// concurrent use.
type Inbox struct {
	dialect Dialect
	group   string
	now     func() time.Time
	insert  string
	purge   string
}

// New returns the inbox of consumer group group (the Kafka group id or
// RocketMQ consumer group: ids are deduplicated per group) in a database of
// the given dialect. The table must exist (Migrate).
func New(dialect Dialect, group string, opts ...Option) (*Inbox, error) {
	if group == "" || len(group) > MaxGroupLen {
		return nil, fmt.Errorf("inbox: consumer group must be 1 to %d bytes, got %d", MaxGroupLen, len(group))
	}
	b := &Inbox{dialect: dialect, group: group, now: time.Now}
	switch dialect {
	case Postgres:
		b.insert = "INSERT INTO ec_inbox (consumer_group, message_id, received_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING"
		b.purge = "DELETE FROM ec_inbox WHERE ctid IN (SELECT ctid FROM ec_inbox WHERE consumer_group = $1 AND received_at < $2 LIMIT $3)"
	case MySQL:
		// INSERT IGNORE also turns some errors into warnings (a too long
		// value would be truncated): Record checks lengths before.
		b.insert = "INSERT IGNORE INTO ec_inbox (consumer_group, message_id, received_at) VALUES (?, ?, ?)"
		b.purge = "DELETE FROM ec_inbox WHERE consumer_group = ? AND received_at < ? LIMIT ?"
	default:
		return nil, fmt.Errorf("inbox: unknown dialect %v", dialect)
	}
	for _, o := range opts {
		o.apply(b)
	}
	return b, nil
}

// Group returns the consumer group the inbox records for.
func (b *Inbox) Group() string { return b.group }

// Record records message id in tx, the transaction that also holds the
// consumer's writes for it. It returns true if the id is new: apply the
// message's effects in tx, then commit. It returns false if the group has
// already committed this id: skip the message (commit or roll back tx, and
// acknowledge it). If another transaction holding the same id is still
// open, Record waits for it (the database's row lock) and answers after it
// ends. On error, roll tx back.
func (b *Inbox) Record(ctx context.Context, tx Execer, id string) (bool, error) {
	if id == "" {
		return false, ErrNoID
	}
	if len(id) > MaxIDLen {
		return false, fmt.Errorf("inbox: record message id: %d bytes, at most %d", len(id), MaxIDLen)
	}
	res, err := tx.ExecContext(ctx, b.insert, b.group, id, b.now().UTC())
	if err != nil {
		return false, fmt.Errorf("inbox: record message %q for group %q: %w", id, b.group, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("inbox: record message %q for group %q: rows affected: %w", id, b.group, err)
	}
	return n == 1, nil
}

// RecordKafka is Record for the ec-id header of a Kafka record. It returns
// ErrNoID if the record has none.
func (b *Inbox) RecordKafka(ctx context.Context, tx Execer, r *kgo.Record) (bool, error) {
	return b.Record(ctx, tx, KafkaID(r))
}

// PropertyGetter is what RocketMQ messages (*primitive.Message and
// *primitive.MessageExt of rocketmq-client-go) offer to read a property.
type PropertyGetter interface {
	GetProperty(name string) string
}

// RecordRocketMQ is Record for the ec-id property of a RocketMQ message. It
// returns ErrNoID if the message has none.
func (b *Inbox) RecordRocketMQ(ctx context.Context, tx Execer, m PropertyGetter) (bool, error) {
	return b.Record(ctx, tx, m.GetProperty(HeaderID))
}

// KafkaID returns the ec-id header of r, or "" if it has none.
func KafkaID(r *kgo.Record) string {
	for i := range r.Headers {
		if r.Headers[i].Key == HeaderID {
			return string(r.Headers[i].Value)
		}
	}
	return ""
}

// Do runs one message through the inbox in a transaction of its own on db:
// it begins, records id, calls apply with the transaction if id is new,
// and commits. It returns whether apply ran and was committed. If apply or
// the commit fails, the transaction is rolled back and nothing of it, the
// inbox row included, remains: the message counts as new when redelivered.
func (b *Inbox) Do(ctx context.Context, db *sql.DB, id string, apply func(ctx context.Context, tx *sql.Tx) error) (applied bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("inbox: begin transaction for message %q: %w", id, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback() // the error said what failed; the rollback cannot help
		}
	}()
	isNew, err := b.Record(ctx, tx, id)
	if err != nil {
		return false, err
	}
	if isNew {
		if err := apply(ctx, tx); err != nil {
			return false, fmt.Errorf("inbox: apply message %q: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("inbox: commit message %q: %w", id, err)
	}
	return isNew, nil
}

// Purge deletes the group's inbox rows received more than retention ago,
// in batches of batch rows (each its own statement, so that locks stay
// short; default 1000 when batch <= 0), and returns how many it deleted.
// A message redelivered after its row is purged is applied again: keep
// retention above the longest redelivery window (the topic's retention).
// Run it on a pool, not in a consumer's transaction.
func (b *Inbox) Purge(ctx context.Context, db Execer, retention time.Duration, batch int) (int64, error) {
	if retention <= 0 {
		return 0, fmt.Errorf("inbox: purge: retention must be positive, got %v", retention)
	}
	if batch <= 0 {
		batch = 1000
	}
	cutoff := b.now().Add(-retention).UTC()
	var total int64
	for {
		res, err := db.ExecContext(ctx, b.purge, b.group, cutoff, batch)
		if err != nil {
			return total, fmt.Errorf("inbox: purge rows of group %q before %s: %w", b.group, cutoff.Format(time.RFC3339), err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("inbox: purge rows of group %q: rows affected: %w", b.group, err)
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
}
