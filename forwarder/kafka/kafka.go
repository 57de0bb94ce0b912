package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/forwarder"
)

// Config configures a Kafka target.
type Config struct {
	// Name is the target's name, for logs and errors. Required.
	Name string
	// Brokers are the seed brokers (host:port). Required.
	Brokers []string
	// AutoCreateTopics lets the producer create business topics that do
	// not exist yet (the broker must allow it too).
	AutoCreateTopics bool
	// Linger is how long a partition's batch waits for more records; 0
	// means 2ms, negative means none.
	Linger time.Duration
	// UnknownTopicRetries is how many metadata refreshes a topic may be
	// missing from before its records fail permanently; 0 means 3.
	UnknownTopicRetries int
	// MetadataMinAge is the shortest time between metadata refreshes; 0
	// means 250ms. franz-go retries a partition whose produce got a
	// retriable error (NOT_ENOUGH_REPLICAS, NOT_LEADER...) only after a
	// refresh, so this is the pause between such retries; its own default
	// of 5s holds a partition for 5s per error, longer than a send's
	// timeout, and its records cannot fail before the next try.
	MetadataMinAge time.Duration
	// ClientOptions are added after the target's own options (TLS, SASL,
	// client id...) and override them.
	ClientOptions []kgo.Opt
	// Logger, scoped by the caller; nil means slog.Default() with
	// component=target and target=Name. The franz-go client logs its
	// warnings and errors through it (its info and debug lines at Debug).
	Logger *slog.Logger
}

func (c *Config) validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("Name: required"))
	}
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("Brokers: at least one seed broker is required"))
	}
	for i, b := range c.Brokers {
		if b == "" {
			errs = append(errs, fmt.Errorf("Brokers[%d]: empty address", i))
		}
	}
	if c.MetadataMinAge < 0 {
		errs = append(errs, fmt.Errorf("MetadataMinAge must not be negative, got %s", c.MetadataMinAge))
	}
	if c.UnknownTopicRetries < 0 {
		errs = append(errs, fmt.Errorf("UnknownTopicRetries must not be negative, got %d", c.UnknownTopicRetries))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafka target config: %w", err)
	}
	return nil
}

// Target produces to Kafka. Create it with New; it is safe for concurrent
// Send calls.
type Target struct {
	name string
	cl   *kgo.Client
}

var _ forwarder.Target = (*Target)(nil)

// New returns a Kafka target. It does not contact the brokers; the first
// Send does.
func New(cfg Config) (*Target, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default().With("component", "target", "target", cfg.Name)
	}
	linger := 2 * time.Millisecond
	switch {
	case cfg.Linger > 0:
		linger = cfg.Linger
	case cfg.Linger < 0:
		linger = 0
	}
	retries := 3
	if cfg.UnknownTopicRetries > 0 {
		retries = cfg.UnknownTopicRetries
	}
	minAge := 250 * time.Millisecond
	if cfg.MetadataMinAge > 0 {
		minAge = cfg.MetadataMinAge
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.MetadataMinAge(minAge),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(linger),
		kgo.UnknownTopicRetries(retries),
		kgo.WithLogger(kgoLogger{cfg.Logger}),
	}
	if cfg.AutoCreateTopics {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	opts = append(opts, cfg.ClientOptions...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka target %q: new client: %w", cfg.Name, err)
	}
	return &Target{name: cfg.Name, cl: cl}, nil
}

// Send produces every record and waits for all of them. Each result carries
// the reference "topic/partition@offset" or the classified error.
func (t *Target) Send(ctx context.Context, recs []forwarder.Record) []forwarder.Result {
	res := make([]forwarder.Result, len(recs))
	krs := make([]kgo.Record, len(recs))
	var wg sync.WaitGroup
	wg.Add(len(recs))
	for i := range recs {
		toKgo(&krs[i], &recs[i])
		t.cl.Produce(ctx, &krs[i], func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				res[i].Err = Classify(r.Topic, err)
				return
			}
			res[i].Ref = Ref(r)
		})
	}
	wg.Wait()
	return res
}

// Close flushes nothing (Send waits for its records) and closes the client.
func (t *Target) Close() error {
	t.cl.Close()
	return nil
}

// Client returns the underlying client (for readiness checks).
func (t *Target) Client() *kgo.Client { return t.cl }

func toKgo(dst *kgo.Record, r *forwarder.Record) {
	dst.Topic = r.Topic
	if r.Key != "" {
		dst.Key = []byte(r.Key)
	}
	dst.Value = r.Value
	if len(r.Headers) > 0 {
		dst.Headers = make([]kgo.RecordHeader, len(r.Headers))
		for i, h := range r.Headers {
			dst.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
		}
	}
}

// Ref formats a produced record's position as "topic/partition@offset".
func Ref(r *kgo.Record) string {
	b := make([]byte, 0, len(r.Topic)+24)
	b = append(b, r.Topic...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(r.Partition), 10)
	b = append(b, '@')
	b = strconv.AppendInt(b, r.Offset, 10)
	return string(b)
}

// Classify wraps a produce error with the topic and marks the errors no
// retry can fix as forwarder.Permanent. Everything else (retriable broker
// errors, timeouts, cancelled contexts, network errors, errors we do not
// know) stays retryable: the message backs off and, after the configured
// attempts, ends DEAD anyway.
func Classify(topic string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		return forwarder.Permanent(fmt.Errorf("kafka topic %q does not exist (and was not auto-created): %w", topic, err))
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return forwarder.Permanent(fmt.Errorf("record for kafka topic %q is larger than the broker or client accepts: %w", topic, err))
	case errors.Is(err, kerr.InvalidTopicException):
		return forwarder.Permanent(fmt.Errorf("kafka topic name %q is invalid: %w", topic, err))
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		return forwarder.Permanent(fmt.Errorf("not authorized to produce to kafka topic %q: %w", topic, err))
	case errors.Is(err, kerr.ClusterAuthorizationFailed), errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		// The center's own credentials lack a cluster permission (e.g.
		// IDEMPOTENT_WRITE): every message would fail, so this is not the
		// message's fault. Retryable: the target's breaker pauses it and
		// nothing goes DEAD while the ACLs are fixed.
		return fmt.Errorf("produce to kafka topic %q: the center's credentials lack a cluster permission: %w", topic, err)
	case errors.Is(err, kerr.PolicyViolation), errors.Is(err, kerr.InvalidRecord):
		return forwarder.Permanent(fmt.Errorf("kafka rejected the record for topic %q: %w", topic, err))
	}
	return fmt.Errorf("produce to kafka topic %q: %w", topic, err)
}

// kgoLogger passes the client's logs to slog: its Warn and Error as such,
// its (chatty) Info and Debug as Debug.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel {
	if k.l.Enabled(context.Background(), slog.LevelDebug) {
		return kgo.LogLevelInfo
	}
	return kgo.LogLevelWarn
}

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelDebug
	switch level {
	case kgo.LogLevelError:
		lv = slog.LevelError
	case kgo.LogLevelWarn:
		lv = slog.LevelWarn
	}
	k.l.Log(context.Background(), lv, msg, keyvals...)
}
