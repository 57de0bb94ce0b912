package clientlib

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/eventcenter/eventcenter/clientlib/kafkaauth"
	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
)

// DefaultControlTopic is the control topic unless WithControlTopic says
// otherwise: envelope.DefaultControlTopic, the center's default too.
const DefaultControlTopic = envelope.DefaultControlTopic

// DefaultDecisionTimeout bounds how long Transact tries to send its COMMIT
// or ROLLBACK once the local transaction has ended.
const DefaultDecisionTimeout = 10 * time.Second

// defaultLinger is the producer-owned client's linger: small, since every
// send waits for its ack.
const defaultLinger = 2 * time.Millisecond

// Option configures a Producer. Options are built only by this package's
// With... functions.
type Option interface{ apply(*producerConfig) }

type optionFunc func(*producerConfig)

func (f optionFunc) apply(c *producerConfig) { f(c) }

type producerConfig struct {
	brokers         []string
	client          *kgo.Client
	controlTopic    string
	logger          *slog.Logger
	defaultVerify   string
	kgoOpts         []kgo.Opt
	decisionTimeout time.Duration
	// security are the TLS / SASL options (WithTLS, WithSASL,
	// WithKafkaAuth); secErr is a WithKafkaAuth that could not be built.
	security []kgo.Opt
	secErr   error
	// compression is WithCompression's setting ("" is the default).
	compression    string
	compressionSet bool
}

// WithBrokers sets the seed brokers of a client the producer creates and
// closes. Exactly one of WithBrokers and WithClient is required.
func WithBrokers(brokers ...string) Option {
	return optionFunc(func(c *producerConfig) { c.brokers = append(c.brokers, brokers...) })
}

// WithClient makes the producer use a client the caller owns: Close does not
// close it. Its configuration is the caller's: records are keyed by
// "bizID:messageKey" and must be partitioned by Kafka's murmur2 key hash
// (kgo's default partitioners do), with acks=all, for the guarantees to hold.
func WithClient(cl *kgo.Client) Option {
	return optionFunc(func(c *producerConfig) { c.client = cl })
}

// WithControlTopic sets the control topic (default "eventcenter.control").
func WithControlTopic(topic string) Option {
	return optionFunc(func(c *producerConfig) { c.controlTopic = topic })
}

// WithLogger sets the logger of the producer and of the client it creates
// (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *producerConfig) { c.logger = l })
}

// WithDefaultVerify sets the check-back endpoint of messages whose Verify is
// empty, e.g. "http://order-svc:8080/eventcenter/check".
func WithDefaultVerify(endpoint string) Option {
	return optionFunc(func(c *producerConfig) { c.defaultVerify = endpoint })
}

// WithKgoOptions adds options to the client the producer creates; they are
// applied after the producer's own (acks=all, idempotent writes, murmur2 key
// partitioner, 2 ms linger) and can override them. Not allowed with
// WithClient.
func WithKgoOptions(opts ...kgo.Opt) Option {
	return optionFunc(func(c *producerConfig) { c.kgoOpts = append(c.kgoOpts, opts...) })
}

// WithDecisionTimeout bounds how long Transact keeps trying to send COMMIT
// or ROLLBACK after the local transaction ended, even if the context passed
// to Transact is canceled by then (default 10s).
func WithDecisionTimeout(d time.Duration) Option {
	return optionFunc(func(c *producerConfig) { c.decisionTimeout = d })
}

// WithTLS encrypts the connection of the client the producer creates with
// cfg (its RootCAs, Certificates, ServerName, MinVersion). Not allowed with
// WithClient.
func WithTLS(cfg *tls.Config) Option {
	return optionFunc(func(c *producerConfig) { c.security = append(c.security, kgo.DialTLSConfig(cfg)) })
}

// WithSASL authenticates the client the producer creates with m, e.g.
// scram.Auth{User: u, Pass: p}.AsSha512Mechanism() from
// github.com/twmb/franz-go/pkg/sasl/scram. Not allowed with WithClient.
func WithSASL(m sasl.Mechanism) Option {
	return optionFunc(func(c *producerConfig) { c.security = append(c.security, kgo.SASL(m)) })
}

// WithKafkaAuth configures TLS and SASL from files as the center does (CA,
// client certificate, password or OAUTHBEARER token files re-read at each
// connection). Not allowed with WithClient.
func WithKafkaAuth(cfg kafkaauth.Config) Option {
	return optionFunc(func(c *producerConfig) {
		opts, err := cfg.Options()
		if err != nil {
			c.secErr = errors.Join(c.secErr, fmt.Errorf("WithKafkaAuth: %w", err))
			return
		}
		c.security = append(c.security, opts...)
	})
}

// WithCompression sets the codec of the control records the producer's
// own client writes: "none", "gzip", "snappy", "lz4", "zstd", or a
// comma-separated list in order of preference (default "snappy",
// kafkarec.ControlCompression: only the center reads control records,
// and snappy costs a fraction of gzip's CPU; none costs none and sends
// more bytes). An empty setting keeps the default. Not allowed with
// WithClient.
func WithCompression(setting string) Option {
	return optionFunc(func(c *producerConfig) { c.compression, c.compressionSet = setting, true })
}

func (c *producerConfig) validate() error {
	if c.secErr != nil {
		return c.secErr
	}
	if c.compressionSet {
		if c.client != nil {
			return errors.New("WithCompression applies to a client the producer creates, not to one given WithClient")
		}
		if _, err := kafkarec.Compression(c.compression); err != nil {
			return fmt.Errorf("WithCompression: %w", err)
		}
	}
	if c.client != nil && len(c.security) > 0 {
		return errors.New("WithTLS, WithSASL and WithKafkaAuth apply to a client the producer creates, not to one given WithClient")
	}
	switch {
	case c.client == nil && len(c.brokers) == 0:
		return errors.New("no Kafka given: use WithBrokers or WithClient")
	case c.client != nil && len(c.brokers) > 0:
		return errors.New("WithBrokers and WithClient both given: use one")
	case c.client != nil && len(c.kgoOpts) > 0:
		return errors.New("WithKgoOptions applies to a client the producer creates, not to one given WithClient")
	}
	for i, b := range c.brokers {
		if b == "" {
			return fmt.Errorf("WithBrokers: broker %d is empty", i)
		}
	}
	if c.controlTopic == "" {
		return errors.New("WithControlTopic: empty topic")
	}
	if c.decisionTimeout <= 0 {
		return fmt.Errorf("WithDecisionTimeout: %v is not positive", c.decisionTimeout)
	}
	if c.defaultVerify != "" {
		probe := envelope.Envelope{Type: envelope.Prepare, BizID: "b", MessageKey: "k", ForwardTopic: "t", Verify: c.defaultVerify}
		if err := probe.Validate(); err != nil {
			return fmt.Errorf("WithDefaultVerify: %w", err)
		}
	}
	return nil
}
