package clientlib

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"

	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
)

// ErrCommitUnsent says that the local transaction committed but its COMMIT
// envelope could not be sent. The message is not lost: the center checks
// the producer back (see NewCheckbackHandler) and then forwards it. The
// error wraps the send failure as well.
var ErrCommitUnsent = errors.New("local transaction committed but the commit was not sent; check-back will settle the message")

// Producer sends the envelopes of reliable messages to the control topic.
// It is safe for concurrent use.
type Producer struct {
	cl              *kgo.Client
	owned           bool
	topic           string
	log             *slog.Logger
	defaultVerify   string
	decisionTimeout time.Duration
	closeOnce       sync.Once
}

// NewProducer returns a producer. With WithBrokers it creates a client
// (acks=all, idempotent writes, Kafka's murmur2 key partitioner, a 2 ms
// linger, snappy batches unless WithCompression says otherwise) that Close
// closes; with WithClient it uses the caller's.
func NewProducer(opts ...Option) (*Producer, error) {
	cfg := producerConfig{
		controlTopic:    DefaultControlTopic,
		decisionTimeout: DefaultDecisionTimeout,
	}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new producer: %w", err)
	}
	// Without WithLogger the producer logs to slog's default logger, and
	// its Kafka client only at warn and above there: franz-go's info lines
	// (metadata loads, producer ids) would otherwise fill a service's log.
	kafkaLog := cfg.logger
	if cfg.logger == nil {
		cfg.logger = slog.Default()
		kafkaLog = slog.New(minLevel{Handler: cfg.logger.Handler(), min: slog.LevelWarn})
	}
	p := &Producer{
		cl:              cfg.client,
		topic:           cfg.controlTopic,
		log:             cfg.logger,
		defaultVerify:   cfg.defaultVerify,
		decisionTimeout: cfg.decisionTimeout,
	}
	if p.cl == nil {
		setting := kafkarec.ControlCompression
		if strings.TrimSpace(cfg.compression) != "" {
			setting = cfg.compression
		}
		compression, err := kafkarec.CompressionOpt(setting)
		if err != nil {
			return nil, fmt.Errorf("new producer: %w", err)
		}
		kopts := append([]kgo.Opt{
			kgo.SeedBrokers(cfg.brokers...),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			// Kafka's default partitioner for keyed records: murmur2 of
			// the key, like the Java client, so that every client
			// library puts a message's envelopes on one partition; the
			// envelopes of a message with an order key go to the
			// partition of bizID:orderKey (Partitioner).
			kgo.RecordPartitioner(Partitioner()),
			kgo.ProducerLinger(defaultLinger),
			compression,
			kgo.WithLogger(kslog.New(kafkaLog)),
		}, append(cfg.security, cfg.kgoOpts...)...)
		cl, err := kgo.NewClient(kopts...)
		if err != nil {
			return nil, fmt.Errorf("new producer: create Kafka client: %w", err)
		}
		p.cl, p.owned = cl, true
	}
	return p, nil
}

// Ping asks the brokers for metadata: a start-up check that the producer
// can connect (TLS, SASL) without sending anything. Bound it with ctx.
func (p *Producer) Ping(ctx context.Context) error {
	if err := p.cl.Ping(ctx); err != nil {
		return fmt.Errorf("ping kafka: %w", err)
	}
	return nil
}

// Close closes the client if the producer created it. Sends in flight fail.
func (p *Producer) Close() {
	p.closeOnce.Do(func() {
		if p.owned {
			p.cl.Close()
		}
	})
}

// ControlTopic returns the topic the producer writes to.
func (p *Producer) ControlTopic() string { return p.topic }

// Prepare announces msg: it validates msg, sends its PREPARE envelope and
// waits for the broker's acknowledgement. Run the local transaction only
// after Prepare returned nil.
//
// If ctx carries an OpenTelemetry span, its W3C trace context goes with the
// message as the forwarded headers traceparent and tracestate: the center's
// spans and the consumer's continue that trace.
func (p *Producer) Prepare(ctx context.Context, msg Message) error {
	e := msg.envelope(p.defaultVerify)
	e.Headers = withTraceContext(ctx, e.Headers)
	if err := p.send(OrderRoute(ctx, msg.BizID, msg.OrderKey), e); err != nil {
		return fmt.Errorf("prepare %s: %w", msg.ID(), err)
	}
	return nil
}

// Commit sends the COMMIT envelope of a prepared message and waits for the
// broker's acknowledgement.
func (p *Producer) Commit(ctx context.Context, bizID, key string) error {
	if err := p.send(ctx, envelope.Envelope{Type: envelope.Commit, BizID: bizID, MessageKey: key}); err != nil {
		return fmt.Errorf("commit %s: %w", envelope.Key(bizID, key), err)
	}
	return nil
}

// Rollback sends the ROLLBACK envelope of a prepared message and waits for
// the broker's acknowledgement.
func (p *Producer) Rollback(ctx context.Context, bizID, key string) error {
	if err := p.send(ctx, envelope.Envelope{Type: envelope.Rollback, BizID: bizID, MessageKey: key}); err != nil {
		return fmt.Errorf("rollback %s: %w", envelope.Key(bizID, key), err)
	}
	return nil
}

// Cancel sends a CANCEL envelope for a message and waits for the broker's
// acknowledgement: if the center has not sent the message yet (typically
// a SCHEDULED one, see Message.DeliverAt), it ends CANCELLED and is never
// sent; if it was sent already, nothing changes (the center counts the
// late cancel). For a message with an order key, pass
// OrderRoute(ctx, bizID, orderKey) so the cancel follows its other
// envelopes.
func (p *Producer) Cancel(ctx context.Context, bizID, key string) error {
	if err := p.send(ctx, envelope.Envelope{Type: envelope.Cancel, BizID: bizID, MessageKey: key}); err != nil {
		return fmt.Errorf("cancel %s: %w", envelope.Key(bizID, key), err)
	}
	return nil
}

// Transact runs fn, the local transaction, between the PREPARE and the
// decision of msg:
//
//   - PREPARE cannot be sent: fn does not run; the error is returned (and a
//     ROLLBACK is tried, in case the PREPARE did reach the broker).
//   - fn returns an error: ROLLBACK is sent; fn's error is returned, joined
//     with the rollback's error if that failed too (check-back then settles
//     the message: the producer's handler answers rollback).
//   - fn returns nil: COMMIT is sent. If it cannot be, the error matches
//     ErrCommitUnsent: the local transaction did commit and check-back
//     will settle the message; do not undo or retry the transaction.
//
// The decision is sent even if ctx is canceled by then, within the
// producer's decision timeout (WithDecisionTimeout). If fn panics nothing
// is sent and check-back settles the message.
func (p *Producer) Transact(ctx context.Context, msg Message, fn func(ctx context.Context) error) error {
	if err := p.Prepare(ctx, msg); err != nil {
		if !errors.Is(err, envelope.ErrInvalid) {
			dctx, cancel := p.decisionContext(ctx)
			if rerr := p.RollbackOrdered(dctx, msg.BizID, msg.Key, msg.OrderKey); rerr != nil {
				p.log.WarnContext(ctx, "eventcenter: rollback after a failed prepare not sent; check-back will settle the message",
					"id", msg.ID(), "err", rerr)
			}
			cancel()
		}
		return fmt.Errorf("transact: %w", err)
	}
	if err := fn(ctx); err != nil {
		dctx, cancel := p.decisionContext(ctx)
		defer cancel()
		if rerr := p.RollbackOrdered(dctx, msg.BizID, msg.Key, msg.OrderKey); rerr != nil {
			return errors.Join(err, fmt.Errorf("transact: %w (check-back will settle the message)", rerr))
		}
		return err
	}
	dctx, cancel := p.decisionContext(ctx)
	defer cancel()
	if err := p.CommitOrdered(dctx, msg.BizID, msg.Key, msg.OrderKey); err != nil {
		return fmt.Errorf("transact: %w: %w", ErrCommitUnsent, err)
	}
	return nil
}

// decisionContext keeps ctx's values but not its cancellation: once the
// local transaction ended, its decision is worth sending.
func (p *Producer) decisionContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), p.decisionTimeout)
}

// send encodes e and produces it synchronously.
func (p *Producer) send(ctx context.Context, e envelope.Envelope) error {
	r, err := envelope.Encode(e)
	if err != nil {
		return err
	}
	rec := kafkarec.Record(p.topic, r)
	rec.Context = ctx
	if err := p.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("produce to %s: %w", p.topic, err)
	}
	return nil
}

// minLevel passes on only records at min or above.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(as), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
