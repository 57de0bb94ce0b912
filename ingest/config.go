package ingest

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/internal/fieldcheck"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultControlTopic   = envelope.DefaultControlTopic
	DefaultGroup          = "eventcenter"
	DefaultMaxPayload     = envelope.DefaultMaxPayload
	DefaultCheckAfter     = envelope.DefaultCheckAfter
	DefaultMaxPollRecords = 5000
	DefaultParallelism    = 4
	DefaultMinApply       = 500
	DefaultFreshFetchWait = 2 * time.Millisecond
	DefaultRetryMin       = 100 * time.Millisecond
	DefaultRetryMax       = 10 * time.Second
	// DefaultDLQRetryBudget bounds how long a dead letter is retried after
	// transient failures before it is written without its value (or
	// dropped and counted).
	DefaultDLQRetryBudget = 30 * time.Second
)

// RecordOverhead is what a forwarded record may take beyond MaxPayload: its
// forward key, forwarded headers and ec-id. A PREPARE whose forwarded
// record (payload, forward key, headers and id) is larger than MaxPayload +
// RecordOverhead is dead-lettered (reason too_large): every forward
// target's producer accepts records of that size plus its framing, so
// nothing ingest accepts is too large to send.
const RecordOverhead = 64 << 10

// DefaultMaxDelay bounds how far ahead a PREPARE may schedule its message
// (ec-deliver-at, ec-delay) when Config.MaxDelay is 0: 90 days.
const DefaultMaxDelay = 90 * 24 * time.Hour

// DLQSuffix is appended to the control topic to name the default
// dead-letter topic.
const DLQSuffix = ".dlq"

// Config configures an Ingester. Zero fields take the defaults above.
type Config struct {
	// Brokers are the seed brokers of the control topic's cluster.
	Brokers []string
	// ControlTopic is the topic envelopes are read from.
	ControlTopic string
	// DLQTopic receives malformed control records; default
	// ControlTopic+".dlq".
	DLQTopic string
	// Group is the consumer group of all eventcenter instances.
	Group string
	// CreateDLQPartitions, when positive, lets the ingester create a
	// missing dead-letter topic with this many partitions when it starts
	// (kafka.create_topics); 0 only reports it missing.
	CreateDLQPartitions int
	// Lane is the control lane this ingester consumes (lane.go): 0, the
	// default, for kafka.control_topic; 1 to MaxLane for an extra lane's
	// topic, whose Kafka partition p is stored, owned and reported as
	// store partition Lane*LaneStride + p. Each lane needs an Ingester of
	// its own, with its own ControlTopic, DLQTopic and Group, sharing the
	// Ownership and Metrics of the others.
	Lane int
	// LaneName is an extra lane's name, the lane label of its metrics;
	// empty for the default lane (whose series keep no lane label).
	LaneName string
	// MaxPayload bounds a PREPARE's payload in bytes; larger records go to
	// the dead-letter topic.
	MaxPayload int
	// CheckAfter returns the first check-back delay for a bizID when the
	// envelope carries none (the verifier's configuration); nil, or a
	// result <= 0, means DefaultCheckAfter.
	CheckAfter func(bizID string) time.Duration
	// CheckDue, when set, is told after each written batch when its
	// PREPAREs fall due for a check-back (the earliest and the latest,
	// never earlier than the store's due times): the verifier's DueAt, so
	// that an idle verifier claims them when due rather than at its next
	// poll. It must not block.
	CheckDue func(at time.Time)
	// CheckTopic, when set, checks a PREPARE's forward topic against the
	// rules of the target it names (target "" is the default target): a
	// non-nil error dead-letters the PREPARE (reason ec-topic, the error's
	// text in the reason header) instead of storing a message that could
	// only go DEAD at send time. An unknown target should return nil (the
	// forwarder reports it).
	CheckTopic func(target, topic string) error
	// MaxDelay bounds a PREPARE's schedule: its ec-deliver-at, or its
	// ec-delay, at most this far after the control record's timestamp;
	// farther, or not after the timestamp, the PREPARE is dead-lettered
	// with the reason. 0 means DefaultMaxDelay.
	MaxDelay time.Duration
	// Scheduling tells whether scheduled delivery is on: every live
	// center keeps a message's deliver-at (the cluster level gate,
	// app/center). While it reports off, a PREPARE with ec-deliver-at
	// or ec-delay is dead-lettered with why as the reason rather than
	// stored where a center of an older release could send it early.
	// nil means on.
	Scheduling func() (on bool, why string)
	// OrderByForwardKey, when set, names the bizIDs whose messages without
	// an ec-order-key are ordered by their forward key (the forward key
	// is then the order key); nil means none.
	OrderByForwardKey func(bizID string) bool
	// MaxPollRecords bounds the records taken per poll (over all
	// partitions).
	MaxPollRecords int
	// Parallelism bounds the store transactions applying one poll at the
	// same time. A poll's partitions are grouped: each group is applied in
	// one transaction, so a light load costs one transaction per poll.
	Parallelism int
	// MinApplyRecords is the fewest records of a poll that get a
	// transaction of their own: a poll of n records is split into at most
	// min(Parallelism, n/MinApplyRecords) groups (at least one).
	MinApplyRecords int
	// FreshFetchWait is how long a poll that found a fetch already
	// buffered waits for the next one, so that a batch also takes the
	// records that reached the broker while the previous batch was
	// applied; it waits only when the previous poll brought more than one
	// record (see Ingester.poll). 0 means 2ms, negative means no wait.
	FreshFetchWait time.Duration
	// RetryMin and RetryMax bound the backoff between attempts to apply a
	// batch (or produce its dead letters) while the store or broker fails.
	RetryMin time.Duration
	RetryMax time.Duration
	// DLQRetryBudget bounds the retries of a dead-letter write after
	// transient failures (each attempt included); after it, the write is
	// treated as failed for good: the record is written without its value,
	// and if even that fails within another budget it is dropped, logged
	// and counted (eventcenter_dlq_dropped_total). The partition never
	// waits longer.
	DLQRetryBudget time.Duration
	// DLQCompression is the codec of the dead letters: "none", "gzip",
	// "snappy", "lz4", "zstd", or a comma-separated list in order of
	// preference (kafkarec.Compression); "" means gzip
	// (kafkarec.DefaultCompression), which every mainstream client reads
	// without a codec package.
	DLQCompression string
	// ClientOptions are appended to the franz-go client options (TLS, SASL,
	// client id, tests' timeouts); they may override the defaults.
	ClientOptions []kgo.Opt
	// Now is the clock stamped on envelopes and the one DLQRetryBudget is
	// measured by (nil: time.Now).
	Now func() time.Time
	// Logger (nil: slog.Default()).
	Logger *slog.Logger
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Metrics, when set, are the metrics recorded (NewMetrics), shared
	// by the ingesters of a center's lanes; Registerer is then unused.
	Metrics *Metrics
}

// DefaultConfig returns a Config with every field that has a default set
// to it (what New makes of a zero field); the binary's configuration starts
// from it and sets what its settings say.
func DefaultConfig() Config {
	var c Config
	c.setDefaults()
	return c
}

func (c *Config) setDefaults() {
	if c.ControlTopic == "" {
		c.ControlTopic = DefaultControlTopic
	}
	if c.DLQTopic == "" {
		c.DLQTopic = c.ControlTopic + DLQSuffix
	}
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = DefaultMaxPollRecords
	}
	if c.Parallelism == 0 {
		c.Parallelism = DefaultParallelism
	}
	if c.FreshFetchWait == 0 {
		c.FreshFetchWait = DefaultFreshFetchWait
	}
	if c.MinApplyRecords == 0 {
		c.MinApplyRecords = DefaultMinApply
	}
	if c.RetryMin == 0 {
		c.RetryMin = DefaultRetryMin
	}
	if c.RetryMax == 0 {
		c.RetryMax = max(DefaultRetryMax, c.RetryMin)
	}
	if c.DLQRetryBudget == 0 {
		c.DLQRetryBudget = DefaultDLQRetryBudget
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate checks a Config after defaults (New applies them first); its
// errors name the field (fieldcheck.Problems reads them back). It is the
// one home of these limits: app/config reports its problems under the
// settings' names rather than checking the fields again.
func (c *Config) Validate() error {
	check := fieldcheck.Checker{Prefix: "ingest config"}
	bad := check.Bad
	if len(c.Brokers) == 0 {
		bad("Brokers", "at least one seed broker is required")
	}
	for i, b := range c.Brokers {
		if b == "" {
			bad(fmt.Sprintf("Brokers[%d]", i), "is empty")
		}
	}
	if c.ControlTopic == "" {
		bad("ControlTopic", "is required")
	}
	if c.DLQTopic == c.ControlTopic {
		bad("DLQTopic", "must differ from ControlTopic %q", c.ControlTopic)
	}
	if c.Group == "" {
		bad("Group", "is required")
	}
	if c.Lane < 0 || c.Lane > MaxLane {
		bad("Lane", "must be 0 (the default lane) to %d, got %d", MaxLane, c.Lane)
	}
	switch {
	case c.Lane == 0 && c.LaneName != "":
		bad("LaneName", "must be empty for the default lane (Lane 0), got %q", c.LaneName)
	case c.Lane > 0 && c.LaneName == "":
		bad("LaneName", "is required for an extra lane (Lane %d): it labels the lane's metrics", c.Lane)
	}
	if c.MaxPayload < 1 || c.MaxPayload > MaxMaxPayload {
		bad("MaxPayload", "must be 1 to %d, got %d", MaxMaxPayload, c.MaxPayload)
	}
	if c.MaxPollRecords < 1 {
		bad("MaxPollRecords", "must be positive, got %d", c.MaxPollRecords)
	}
	if c.Parallelism < 1 {
		bad("Parallelism", "must be positive, got %d", c.Parallelism)
	}
	if c.MinApplyRecords < 1 {
		bad("MinApplyRecords", "must be positive, got %d", c.MinApplyRecords)
	}
	if c.RetryMin <= 0 {
		bad("RetryMin", "must be positive, got %v", c.RetryMin)
	}
	if c.RetryMax < c.RetryMin {
		bad("RetryMax", "must be at least RetryMin (%v), got %v", c.RetryMin, c.RetryMax)
	}
	if c.MaxDelay <= 0 || c.MaxDelay > envelope.MaxDelay {
		bad("MaxDelay", "must be within (0, %v], got %v", envelope.MaxDelay, c.MaxDelay)
	}
	if c.DLQRetryBudget < 0 {
		bad("DLQRetryBudget", "must not be negative, got %v", c.DLQRetryBudget)
	}
	if _, err := kafkarec.Compression(c.DLQCompression); err != nil {
		bad("DLQCompression", "%v", err)
	}
	return check.Err()
}

// MaxMaxPayload is the largest MaxPayload: a forwarded record and its
// framing must stay within the 1 GiB a Kafka producer batch may take.
const MaxMaxPayload = 1<<30 - RecordOverhead - 8<<10

// maxRecord is the largest forwarded record a PREPARE may carry.
func (c *Config) maxRecord() int { return c.MaxPayload + RecordOverhead }

// checkAfter resolves the first check-back delay of an envelope.
// orderKey is the order key of a PREPARE: its ec-order-key, or its
// forward key when its bizID is ordered by forward key.
func (c *Config) orderKey(e *envelope.Envelope) string {
	if e.OrderKey != "" || e.ForwardKey == "" || c.OrderByForwardKey == nil || !c.OrderByForwardKey(e.BizID) {
		return e.OrderKey
	}
	return e.ForwardKey
}

func (c *Config) checkAfter(e *envelope.Envelope) time.Duration {
	if e.CheckAfter > 0 {
		return e.CheckAfter
	}
	if c.CheckAfter != nil {
		if d := c.CheckAfter(e.BizID); d > 0 {
			return d
		}
	}
	return DefaultCheckAfter
}
