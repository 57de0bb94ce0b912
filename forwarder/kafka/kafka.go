package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
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
	// MaxMessageBytes is the largest record batch the target sends for one
	// large record; set it to at most the forward topics' max.message.bytes
	// (and at least the largest record ingest accepts: its max payload plus
	// 64 KiB for key, headers and id, plus RecordFraming). Records that do
	// not fit in a batch of franz-go's default size (1,000,012 bytes) are
	// sent one per batch through a second producer with this limit; smaller
	// ones are batched together up to min(1,000,012, MaxMessageBytes), so a
	// batch of many never grows past what a broker with default settings
	// accepts. 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// Compression is the codec of the forwarded records: "none", "gzip",
	// "snappy", "lz4", "zstd", or a comma-separated list in order of
	// preference (kafkarec.Compression). "" means gzip
	// (kafkarec.DefaultCompression), which every mainstream consumer
	// reads without a codec package (KafkaJS 2.x reads no snappy).
	Compression string
	// ClientOptions are added after the target's own options (TLS, SASL,
	// client id...) and override them.
	ClientOptions []kgo.Opt
	// Logger, scoped by the caller; nil means slog.Default() with
	// component=target and target=Name. The franz-go client logs its
	// warnings and errors through it (its info and debug lines at Debug).
	Logger *slog.Logger
}

// Record sizes.
const (
	// RecordFraming bounds what a record batch holding one record adds to
	// the record's key, value and headers: the batch header (61 bytes) and
	// the length fields of the record and its headers (up to 65 headers).
	RecordFraming = 2 << 10
	// DefaultMaxMessageBytes fits the largest record ingest accepts with
	// its default payload limit (1 MiB plus 64 KiB of key, headers and id).
	DefaultMaxMessageBytes = 1<<20 + 64<<10 + RecordFraming
	// DefaultBatchBytes is franz-go's default ProducerBatchMaxBytes, below
	// Kafka's default max.message.bytes (1,048,588).
	DefaultBatchBytes = 1_000_012
	// MaxBatchBytes is the largest batch franz-go accepts.
	MaxBatchBytes = 1 << 30
)

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
	if c.MaxMessageBytes != 0 && (c.MaxMessageBytes < 512 || c.MaxMessageBytes > MaxBatchBytes) {
		errs = append(errs, fmt.Errorf("MaxMessageBytes must be 0 (default %d) or 512 to %d, got %d", DefaultMaxMessageBytes, MaxBatchBytes, c.MaxMessageBytes))
	}
	if _, err := kafkarec.Compression(c.Compression); err != nil {
		errs = append(errs, fmt.Errorf("Compression: %w", err))
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
	name    string
	brokers string // the seed brokers, for errors
	cl      *kgo.Client
	// big sends records larger than smallMax (less RecordFraming), one per
	// batch of at most maxMsg bytes; nil when maxMsg <= smallMax.
	big      *kgo.Client
	smallMax int
	maxMsg   int
	// throttled hears the brokers' throttle_time_ms (see OnThrottle).
	throttled *throttleHook
	// ord sends SendInOrder's records (inorder.go): the same options,
	// flushed by hand, one SendInOrder at a time (ordMu); pipelines tells
	// whether its settings keep a partition's order across retries.
	ord       *kgo.Client
	ordMu     sync.Mutex
	pipelines bool
	log       *slog.Logger
}

var _ forwarder.OrderedTarget = (*Target)(nil)

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
	maxMsg := cfg.MaxMessageBytes
	if maxMsg == 0 {
		maxMsg = DefaultMaxMessageBytes
	}
	smallMax := min(DefaultBatchBytes, maxMsg)
	compression, err := kafkarec.CompressionOpt(cfg.Compression)
	if err != nil {
		return nil, fmt.Errorf("kafka target %q: %w", cfg.Name, err)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.MetadataMinAge(minAge),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(linger),
		kgo.UnknownTopicRetries(retries),
		compression,
		kgo.WithLogger(ClientLogger(cfg.Logger)),
	}
	hook := &throttleHook{}
	opts = append(opts, kgo.WithHooks(hook))
	if cfg.AutoCreateTopics {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	client := func(batchMax int, extra ...kgo.Opt) (*kgo.Client, error) {
		o := append(append(append(slices.Clip(opts), kgo.ProducerBatchMaxBytes(int32(batchMax))), extra...), cfg.ClientOptions...)
		return kgo.NewClient(o...)
	}
	cl, err := client(smallMax)
	if err != nil {
		return nil, fmt.Errorf("kafka target %q: new client: %w", cfg.Name, err)
	}
	t := &Target{name: cfg.Name, brokers: strings.Join(cfg.Brokers, ","), cl: cl, smallMax: smallMax, maxMsg: maxMsg, throttled: hook,
		log: cfg.Logger}
	if maxMsg > smallMax {
		if t.big, err = client(maxMsg); err != nil {
			cl.Close()
			return nil, fmt.Errorf("kafka target %q: new client for large records: %w", cfg.Name, err)
		}
	}
	if t.ord, err = client(smallMax, orderedOpts()...); err != nil {
		_ = t.Close()
		return nil, fmt.Errorf("kafka target %q: new client for ordered sends: %w", cfg.Name, err)
	}
	t.pipelines = keepsPartitionOrder(t.ord)
	return t, nil
}

// Send produces every record and waits for all of them. Each result carries
// the reference "topic/partition@offset" or the classified error. A record
// too large for a shared batch is sent alone, after the records before it
// and before those after it, so records of one key keep their order.
func (t *Target) Send(ctx context.Context, recs []forwarder.Record) []forwarder.Result {
	res := make([]forwarder.Result, len(recs))
	krs := make([]kgo.Record, len(recs))
	var wg sync.WaitGroup
	for i := range recs {
		toKgo(&krs[i], &recs[i])
		size := recordSize(&krs[i])
		cl, alone := t.cl, t.big != nil && size+RecordFraming > t.smallMax
		if alone {
			wg.Wait()
			cl = t.big
		}
		wg.Add(1)
		cl.Produce(ctx, &krs[i], func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				res[i].Err = t.wrap(t.classify(r.Topic, size, err))
				return
			}
			res[i].Ref = Ref(r)
		})
		if alone {
			wg.Wait()
		}
	}
	wg.Wait()
	return res
}

// classify is Classify, naming the target's limit when a record exceeds it.
func (t *Target) classify(topic string, size int, err error) error {
	if errors.Is(err, kerr.MessageTooLarge) && size+RecordFraming > t.maxMsg {
		return forwarder.Permanent(fmt.Errorf("record for kafka topic %q: %d bytes of key, value and headers exceed the target's max message bytes (%d): %w", topic, size, t.maxMsg, err))
	}
	return Classify(topic, err)
}

// wrap names the target and its brokers in a send error: a bare "context
// deadline exceeded" in a message's last error said neither where the
// send went nor that nothing answered.
func (t *Target) wrap(err error) error {
	what := ""
	if errors.Is(err, context.DeadlineExceeded) {
		what = ", no acknowledgement within the send timeout: are they up and reachable?"
	}
	return fmt.Errorf("kafka target %q (brokers %s%s): %w", t.name, t.brokers, what, err)
}

// recordSize is a record's key, value and headers in bytes.
func recordSize(r *kgo.Record) int { return kafkarec.Size(r) }

// Close flushes nothing (Send waits for its records) and closes the
// clients.
func (t *Target) Close() error {
	t.cl.Close()
	if t.big != nil {
		t.big.Close()
	}
	if t.ord != nil {
		t.ord.Close()
	}
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
	dst.Headers = kafkarec.KgoHeaders(r.Headers)
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
