// Command inboxrocketmq is a rocketmq-client-go push consumer of messages
// forwarded by eventcenter that applies each message's effects exactly
// once, with the inbox of clientlib/inbox in its own PostgreSQL or MySQL
// database.
//
//	go run ./examples/inboxrocketmq -nameserver 127.0.0.1:9876 -topic orders \
//	    -group billing -dialect mysql -dsn 'user:pass@tcp(127.0.0.1:3306)/app'
//
// Each message goes through one database transaction holding its inbox row
// (by its ec-id property) and the consumer's writes. A message is
// acknowledged (ConsumeSuccess) only after that commit; if the transaction
// fails, the handler retries it a few times and then answers
// ConsumeRetryLater, and the broker redelivers it later. A redelivery of a
// message whose transaction committed (the acknowledgement or the consumer
// offset was lost, or the center forwarded it twice) is skipped.
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

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	_ "github.com/go-sql-driver/mysql" // database/sql driver "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/eventcenter/eventcenter/clientlib/inbox"
)

func main() {
	nameServer := flag.String("nameserver", "127.0.0.1:9876", "RocketMQ name server")
	topic := flag.String("topic", "orders", "forward topic to consume")
	group := flag.String("group", "billing", "consumer group (the inbox deduplicates per group)")
	dialect := flag.String("dialect", "postgres", "postgres or mysql")
	dsn := flag.String("dsn", "", "database DSN (pgx URL or go-sql-driver DSN)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *nameServer, *topic, *group, *dialect, *dsn); err != nil {
		slog.Error("inboxrocketmq", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, nameServer, topic, group, dialect, dsn string) error {
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
	h := &Handler{DB: db, Inbox: in, Apply: func(ctx context.Context, tx *sql.Tx, m *primitive.MessageExt) error {
		// The consumer's own writes go here, in tx.
		_, err := tx.ExecContext(ctx, "SELECT 1")
		return err
	}}
	c, err := consumer.NewPushConsumer(
		consumer.WithNameServer([]string{nameServer}),
		consumer.WithGroupName(group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		return fmt.Errorf("new push consumer: %w", err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{}, h.Consume); err != nil {
		return fmt.Errorf("subscribe %s: %w", topic, err)
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("start push consumer: %w", err)
	}
	<-ctx.Done()
	if err := c.Shutdown(); err != nil {
		return fmt.Errorf("shut down push consumer: %w", err)
	}
	return nil
}

// Handler applies forwarded messages exactly once; its Consume is the push
// consumer's callback.
type Handler struct {
	DB    *sql.DB
	Inbox *inbox.Inbox
	// Apply makes the message's effects in tx. An error aborts the
	// transaction, the inbox row included.
	Apply func(ctx context.Context, tx *sql.Tx, m *primitive.MessageExt) error
	// Attempts is how many times Consume tries a message's transaction
	// before it answers ConsumeRetryLater (default 3).
	Attempts int
	// Handled, if set, is called after a message's transaction committed
	// (applied is false for a duplicate the inbox skipped).
	Handled func(m *primitive.MessageExt, applied bool)
}

// Consume processes msgs (the push consumer calls it from several
// goroutines at once; the database serialises transactions on one id).
func (h *Handler) Consume(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	for _, m := range msgs {
		if err := h.one(ctx, m); err != nil {
			slog.WarnContext(ctx, "message will be redelivered", "topic", m.Topic, "msg_id", m.MsgId, "err", err)
			return consumer.ConsumeRetryLater, err
		}
	}
	return consumer.ConsumeSuccess, nil
}

func (h *Handler) one(ctx context.Context, m *primitive.MessageExt) error {
	id := m.GetProperty(inbox.HeaderID)
	if id == "" {
		slog.WarnContext(ctx, "message without ec-id skipped", "topic", m.Topic, "msg_id", m.MsgId)
		return nil
	}
	attempts := h.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	var err error
	for range attempts {
		var applied bool
		applied, err = h.Inbox.Do(ctx, h.DB, id, func(ctx context.Context, tx *sql.Tx) error { return h.Apply(ctx, tx, m) })
		if err == nil {
			if h.Handled != nil {
				h.Handled(m, applied)
			}
			return nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(err, ctx.Err())
}
