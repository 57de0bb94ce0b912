package producerapi

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/internal/fieldcheck"
)

// Defaults of zero Config fields: New gives them to zero fields, and the
// binary's configuration (app/config) starts from them (DefaultConfig), so
// the library and the product cannot disagree.
const (
	DefaultRate           = 1000
	DefaultBurst          = 2000
	DefaultMaxBatch       = 500
	DefaultMaxBatchBytes  = 8 << 20
	DefaultProduceTimeout = 10 * time.Second
	DefaultMaxConcurrent  = 64
)

// Config configures the handler. Zero fields take the documented defaults.
type Config struct {
	// Producer writes to ControlTopic. Required.
	Producer     Producer
	ControlTopic string
	// ControlTopicFor, when set, is the control topic of a bizID's
	// envelopes: its control lane's (kafka.lanes), or ControlTopic. nil
	// means ControlTopic for all.
	ControlTopicFor func(bizID string) string
	// Store answers GET /v1/messages/{bizID}/{key}. Required.
	Store Getter
	// MaxPayload is ingest's payload limit (ingest.max_payload_bytes); 0
	// means envelope.DefaultMaxPayload. A PREPARE over it is refused 413,
	// as is one whose forwarded record would exceed MaxPayload +
	// ingest.RecordOverhead (which ingest would dead-letter).
	MaxPayload int
	// CheckTopic is ingest's check of a PREPARE's forward topic against
	// its target (ingest.Config.CheckTopic); nil checks nothing more than
	// the envelope rules.
	CheckTopic func(target, topic string) error
	// Scheduling is ingest's scheduled-delivery gate
	// (ingest.Config.Scheduling): while it reports off, a PREPARE with
	// ec-deliver-at or ec-delay is refused 503 with the reason instead of
	// being written for ingest to dead-letter. nil means on.
	Scheduling func() (on bool, why string)
	// Tokens are the producer tokens; TokenSource, when set, is asked on
	// every request instead (re-read token files).
	Tokens      []Token
	TokenSource func() []Token
	// Insecure, without tokens, accepts requests without one for every
	// bizID (dev).
	Insecure bool
	// Rate and Burst are the default token bucket of a token, in
	// envelopes per second.
	Rate  float64
	Burst int
	// MaxBatch bounds the envelopes of a batch, MaxBatchBytes its body.
	MaxBatch      int
	MaxBatchBytes int
	// MaxConcurrent bounds the requests served at once; the rest are
	// answered 503 with Retry-After at once.
	MaxConcurrent int
	// MaxDelay is ingest's bound on a schedule (forward.max_delay,
	// ingest.Config.MaxDelay); 0 means ingest.DefaultMaxDelay.
	MaxDelay time.Duration
	// ProduceTimeout bounds waiting for the broker; then 503.
	ProduceTimeout time.Duration
	Now            func() time.Time
	Logger         *slog.Logger
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer

	// observe, when set, is told every answered request (tests: every
	// route and status must be in the OpenAPI document).
	observe func(route string, code int)
}

// DefaultConfig returns a Config holding the defaults New gives zero
// fields. The binary's configuration starts from it and sets what its
// settings say; Validate then refuses what a setting made zero.
func DefaultConfig() Config { return Config{}.WithDefaults() }

// WithDefaults returns c with every zero field given its default, as New
// does; cfg.WithDefaults().Validate() checks a Config before New.
func (c Config) WithDefaults() Config {
	c.setDefaults()
	return c
}

func (c *Config) setDefaults() {
	def(&c.ControlTopic, envelope.DefaultControlTopic)
	def(&c.MaxPayload, envelope.DefaultMaxPayload)
	def(&c.Rate, DefaultRate)
	def(&c.Burst, DefaultBurst)
	def(&c.MaxBatch, DefaultMaxBatch)
	def(&c.MaxBatchBytes, DefaultMaxBatchBytes)
	def(&c.ProduceTimeout, DefaultProduceTimeout)
	def(&c.MaxConcurrent, DefaultMaxConcurrent)
	def(&c.MaxDelay, ingest.DefaultMaxDelay)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// def gives *v the default d when it is zero.
func def[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Validate checks a Config as New takes it, after its defaults
// (WithDefaults; DefaultConfig for the fields the caller sets): every
// limit must be positive, 0 included, and a batch body must fit one
// largest envelope (MaxBatchBytes at least MaxPayload +
// ingest.RecordOverhead). Its errors name the field (fieldcheck.Problems
// reads them back). It is the one home of these limits: app/config
// reports its problems under the settings' names rather than checking the
// fields again.
func (c Config) Validate() error { return c.validate(true) }

// validate is Validate; New leaves out the batch body's room for one
// largest envelope (wholeEnvelope false): a smaller MaxBatchBytes only
// refuses such a batch 413, as any batch over the limit.
func (c *Config) validate(wholeEnvelope bool) error {
	check := fieldcheck.Checker{Prefix: "producerapi config"}
	bad := check.Bad
	if c.Producer == nil {
		bad("Producer", "is required")
	}
	if c.Store == nil {
		bad("Store", "is required")
	}
	if c.Rate <= 0 {
		bad("Rate", "must be positive (envelopes per second per token), got %v", c.Rate)
	}
	atLeastOne := func(field string, n int) {
		if n < 1 {
			bad(field, "must be at least 1, got %d", n)
		}
	}
	atLeastOne("Burst", c.Burst)
	atLeastOne("MaxBatch", c.MaxBatch)
	atLeastOne("MaxConcurrent", c.MaxConcurrent)
	atLeastOne("MaxPayload", c.MaxPayload)
	switch least := c.MaxPayload + ingest.RecordOverhead; {
	case c.MaxBatchBytes < 1:
		bad("MaxBatchBytes", "must be positive, got %d", c.MaxBatchBytes)
	case wholeEnvelope && c.MaxBatchBytes < least:
		bad("MaxBatchBytes", "must be at least MaxPayload + 64 KiB (%d), to fit a batch of one largest envelope, got %d", least, c.MaxBatchBytes)
	}
	if c.ProduceTimeout <= 0 {
		bad("ProduceTimeout", "must be positive, got %v", c.ProduceTimeout)
	}
	if c.MaxDelay <= 0 {
		bad("MaxDelay", "must be positive, got %v", c.MaxDelay)
	}
	return check.Err()
}
