// Command inboxkafka is a franz-go consumer of messages forwarded by
// eventcenter that applies each message's effects exactly once, with the
// inbox of clientlib/inbox in its own PostgreSQL or MySQL database.
//
//	go run ./examples/inboxkafka -brokers 127.0.0.1:9092 -topic orders \
//	    -group billing -dialect postgres -dsn 'postgres://...'
//
// Every record goes through one database transaction: the inbox row for its
// ec-id and the consumer's own writes commit together or not at all. Kafka
// offsets are committed only after that, so a crash at any point either
// redelivers a record whose transaction was undone (it is applied now) or
// one whose transaction committed (the inbox skips it).
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	_ "github.com/go-sql-driver/mysql" // database/sql driver "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/clientlib/inbox"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "Kafka brokers, comma separated")
	topic := flag.String("topic", "orders", "forward topic to consume")
	group := flag.String("group", "billing", "consumer group (the inbox deduplicates per group)")
	dialect := flag.String("dialect", "postgres", "postgres or mysql")
	dsn := flag.String("dsn", "", "database DSN (pgx URL or go-sql-driver DSN)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, strings.Split(*brokers, ","), *topic, *group, *dialect, *dsn); err != nil && !errors.Is(err, context.Canceled) {
		slog.Error("inboxkafka", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, brokers []string, topic, group, dialect, dsn string) error {
	d, driver := inbox.Postgres, "pgx"
	if dialect == "mysql" {
		d, driver = inbox.MySQL, "mysql"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer db.Close()
	if err := inbox.Migrate(ctx, db, d); err != nil {
		return err
	}
	in, err := inbox.New(d, group)
	if err != nil {
		return err
	}
	cl, err := NewClient(brokers, topic, group)
	if err != nil {
		return err
	}
	defer cl.Close()
	c := &Consumer{Client: cl, DB: db, Inbox: in, Apply: func(ctx context.Context, tx *sql.Tx, r *kgo.Record) error {
		// The consumer's own writes go here, in tx.
		_, err := tx.ExecContext(ctx, "SELECT 1")
		return err
	}}
	return c.Run(ctx)
}

// NewClient returns a group consumer that leaves offset commits to
// Consumer.Run (no autocommit) and holds rebalances while a poll's records
// are processed.
func NewClient(brokers []string, topic, group string, opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("new kafka client: %w", err)
	}
	return cl, nil
}

// Consumer applies forwarded records exactly once.
type Consumer struct {
	Client *kgo.Client // from NewClient
	DB     *sql.DB
	Inbox  *inbox.Inbox
	// Apply makes the record's effects in tx. An error aborts the
	// transaction (the inbox row included) and stops Run: the record will
	// be delivered again.
	Apply func(ctx context.Context, tx *sql.Tx, r *kgo.Record) error
	// Handled, if set, is called after each record's transaction
	// committed (applied is false for a duplicate the inbox skipped),
	// before its offset is committed to Kafka.
	Handled func(r *kgo.Record, applied bool)
}

// Run polls and processes records until ctx ends or a record fails. It does
// not commit offsets of records it did not finish.
func (c *Consumer) Run(ctx context.Context) error {
	for {
		fetches := c.Client.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			c.Client.AllowRebalance()
			return err
		}
		if fetches.IsClientClosed() {
			return errors.New("kafka client closed")
		}
		var ferr error
		fetches.EachError(func(topic string, partition int32, err error) {
			ferr = errors.Join(ferr, fmt.Errorf("fetch %s[%d]: %w", topic, partition, err))
		})
		if ferr != nil {
			c.Client.AllowRebalance()
			return ferr
		}
		err := c.process(ctx, fetches)
		if err == nil {
			// Only records whose transactions committed: process stops at
			// the first failure, and nothing of this poll is committed then.
			err = c.Client.CommitUncommittedOffsets(ctx)
			if err != nil {
				err = fmt.Errorf("commit offsets: %w", err)
			}
		}
		c.Client.AllowRebalance()
		if err != nil {
			return err
		}
	}
}

func (c *Consumer) process(ctx context.Context, fetches kgo.Fetches) error {
	for it := fetches.RecordIter(); !it.Done(); {
		r := it.Next()
		id := inbox.KafkaID(r)
		if id == "" {
			// Not forwarded by eventcenter: nothing to deduplicate by.
			slog.WarnContext(ctx, "record without ec-id skipped", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset)
			continue
		}
		// The consumer's span continues the producer's trace (the
		// forwarded traceparent); the global provider is a no-op unless the
		// program installs an SDK.
		sctx, span := otel.Tracer("inboxkafka").Start(clientlib.RecordContext(ctx, r), "consume "+r.Topic,
			trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attribute.String("eventcenter.message_id", id)))
		applied, err := c.Inbox.Do(sctx, c.DB, id, func(ctx context.Context, tx *sql.Tx) error { return c.Apply(ctx, tx, r) })
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "not applied")
			span.End()
			return fmt.Errorf("record %s[%d]@%d: %w", r.Topic, r.Partition, r.Offset, err)
		}
		span.SetAttributes(attribute.Bool("eventcenter.duplicate", !applied))
		span.End()
		if c.Handled != nil {
			c.Handled(r, applied)
		}
	}
	return nil
}
