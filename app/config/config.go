package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caarlos0/env/v11"
	gomysql "github.com/go-sql-driver/mysql"
	"gopkg.in/yaml.v3"

	"github.com/eventcenter/eventcenter/app/retention"
	"github.com/eventcenter/eventcenter/clientlib/kafkaauth"
	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/forwarder/kafka"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/store/sharded"
	"github.com/eventcenter/eventcenter/verifier"
)

// Config is the whole configuration file.
type Config struct {
	Kafka     Kafka     `yaml:"kafka"`
	Store     Store     `yaml:"store"`
	HTTP      HTTP      `yaml:"http"`
	Admin     Admin     `yaml:"admin"`
	Ingest    Ingest    `yaml:"ingest"`
	Forward   Forward   `yaml:"forward"`
	Checkback Checkback `yaml:"checkback"`
	Retention Retention `yaml:"retention"`
	Log       Log       `yaml:"log"`
	// Ingress is the producer HTTP API (ingress.go).
	Ingress Ingress `yaml:"ingress"`

	// source maps the YAML path of each field ApplyEnv or a flag set to
	// the variable or flag, so that Validate names where the value came
	// from.
	source map[string]string
}

// Kafka is the control topic's cluster.
type Kafka struct {
	Brokers      []string `yaml:"brokers" env:"EVENTCENTER_KAFKA_BROKERS" envSeparator:","`
	ControlTopic string   `yaml:"control_topic" env:"EVENTCENTER_KAFKA_CONTROL_TOPIC"`
	// DLQTopic defaults to <control_topic>.dlq.
	DLQTopic string `yaml:"dlq_topic" env:"EVENTCENTER_KAFKA_DLQ_TOPIC"`
	Group    string `yaml:"group" env:"EVENTCENTER_KAFKA_GROUP"`
	ClientID string `yaml:"client_id" env:"EVENTCENTER_KAFKA_CLIENT_ID"`
	// SessionTimeout is how long the group waits for a silent member
	// before giving its partitions to others (a crashed instance's work
	// moves after this long).
	SessionTimeout time.Duration `yaml:"session_timeout" env:"EVENTCENTER_KAFKA_SESSION_TIMEOUT"`
	// MetadataMaxAge is how often the client refreshes topic metadata; it
	// bounds how long a running center takes to consume partitions added
	// to the control topic (zero: franz-go's default, 5m).
	MetadataMaxAge time.Duration `yaml:"metadata_max_age" env:"EVENTCENTER_KAFKA_METADATA_MAX_AGE"`
	// CreateTopics lets the center create the control topic when it is
	// missing, and the dead-letter topics (every lane's too; ControlPartitions
	// partitions, the brokers' default replication factor). Off by default in serve: there a missing
	// control topic is logged as an error and /readyz answers 503 until
	// someone creates it. dev turns it on.
	CreateTopics bool `yaml:"create_topics" env:"EVENTCENTER_KAFKA_CREATE_TOPICS"`
	// ControlPartitions is the partition count of a control topic the
	// center creates (kafka.create_topics); it bounds how many instances
	// share the work.
	ControlPartitions int `yaml:"control_partitions" env:"EVENTCENTER_KAFKA_CONTROL_PARTITIONS"`
	// Compression is the codec of what the center writes to this cluster:
	// dead letters and the producer HTTP API's control records. One of
	// none, gzip, snappy, lz4, zstd, or a comma-separated list in order
	// of preference; "" means gzip for dead letters, which every
	// mainstream client reads without a codec package (see
	// kafkarec.DefaultCompression), and snappy for control records, which
	// only the center reads (kafkarec.ControlCompression).
	Compression string `yaml:"compression" env:"EVENTCENTER_KAFKA_COMPRESSION"`
	// Auth is kafka.tls and kafka.sasl (see security.go).
	Auth kafkaauth.Config `yaml:",inline"`
	// Lanes are extra control topics, each with a consumer of its own
	// (lanes.go); none by default.
	Lanes []Lane `yaml:"lanes"`
}

// Store is the database.
type Store struct {
	// Driver is "postgres", "mysql" (MySQL 8.0.1+ or MariaDB 10.6+) or
	// "sqlite".
	Driver string `yaml:"driver" env:"EVENTCENTER_STORE_DRIVER"`
	// DSN is a PostgreSQL URL, a MySQL DSN (user:password@tcp(host:3306)/dbname)
	// or a SQLite file path.
	DSN      string `yaml:"dsn" env:"EVENTCENTER_STORE_DSN"`
	MaxConns int    `yaml:"max_conns" env:"EVENTCENTER_STORE_MAX_CONNS"`
	// AutoMigrate applies migrations at start-up (dev); otherwise run
	// "eventcenter migrate" and the center checks the schema at start-up.
	AutoMigrate bool `yaml:"auto_migrate" env:"EVENTCENTER_STORE_AUTO_MIGRATE"`
	// Password and PasswordFile: see security.go.
	StoreSecrets `yaml:",inline"`
	// Shards, with Driver "sharded", spread the messages over several
	// PostgreSQL servers (store/sharded; docs/shards.md). MaxConns and
	// AutoMigrate apply to each shard; DSN is unused.
	Shards []StoreShard `yaml:"shards"`
}

// StoreShard is one shard of a sharded store.
type StoreShard struct {
	// DSN is the shard's PostgreSQL URL (the password in it, if any).
	DSN string `yaml:"dsn"`
	// Buckets lists the virtual buckets (0-1023) the shard holds, as
	// ranges: "0-511" or "0-99,200-299". Every bucket is held by exactly
	// one shard.
	Buckets string `yaml:"buckets"`
}

// HTTP is the listener for the admin API, /ui, /metrics, /healthz, /readyz.
type HTTP struct {
	Listen string `yaml:"listen" env:"EVENTCENTER_HTTP_LISTEN"`
	// ReadTimeout bounds reading one whole request, body included;
	// WriteTimeout bounds answering it (from the end of its headers; long
	// enough for the largest console page); IdleTimeout closes a keep-alive
	// connection left idle.
	ReadTimeout  time.Duration `yaml:"read_timeout" env:"EVENTCENTER_HTTP_READ_TIMEOUT"`
	WriteTimeout time.Duration `yaml:"write_timeout" env:"EVENTCENTER_HTTP_WRITE_TIMEOUT"`
	IdleTimeout  time.Duration `yaml:"idle_timeout" env:"EVENTCENTER_HTTP_IDLE_TIMEOUT"`
	// MaxConcurrent caps the admin API and console requests served at
	// once; more are answered 503 (/metrics and the probes are not capped).
	MaxConcurrent int `yaml:"max_concurrent" env:"EVENTCENTER_HTTP_MAX_CONCURRENT"`
}

// Admin configures access to the admin API and console.
type Admin struct {
	Tokens []Token `yaml:"tokens"`
	// TokensEnv holds tokens as "name:scope:token,..." (for secrets that
	// should not be in the file).
	TokensEnv string `yaml:"-" env:"EVENTCENTER_ADMIN_TOKENS"`
	// Insecure opens the API without tokens (dev only).
	Insecure bool `yaml:"insecure" env:"EVENTCENTER_ADMIN_INSECURE"`
}

// Token is one bearer token.
type Token struct {
	Name  string `yaml:"name"`
	Token string `yaml:"token"`
	// Scope is "read" or "admin".
	Scope string `yaml:"scope"`
	// TokenFile holds the token instead of Token (see security.go).
	TokenFile string `yaml:"token_file"`
}

// Ingest tunes the control-topic consumer.
type Ingest struct {
	MaxPayloadBytes int           `yaml:"max_payload_bytes" env:"EVENTCENTER_INGEST_MAX_PAYLOAD_BYTES"`
	SendLease       time.Duration `yaml:"send_lease" env:"EVENTCENTER_INGEST_SEND_LEASE"`
	// Parallelism bounds the store transactions applying one poll at once;
	// MinApplyRecords is the fewest records of a poll given a transaction
	// of their own (a light poll is one transaction).
	Parallelism     int `yaml:"parallelism" env:"EVENTCENTER_INGEST_PARALLELISM"`
	MinApplyRecords int `yaml:"min_apply_records" env:"EVENTCENTER_INGEST_MIN_APPLY_RECORDS"`
	// FreshFetchWait is how long a poll that found a fetch buffered waits
	// for the next one (when the previous poll brought more than one
	// record), so that a batch also takes what reached the broker while
	// the previous one was applied; negative means no wait.
	FreshFetchWait time.Duration `yaml:"fresh_fetch_wait" env:"EVENTCENTER_INGEST_FRESH_FETCH_WAIT"`
	// DLQRetryBudget bounds how long a dead-letter write is retried after
	// transient errors before the record is written without its value (and
	// as long again before it is dropped and counted); 0 means 30s.
	DLQRetryBudget time.Duration `yaml:"dlq_retry_budget" env:"EVENTCENTER_INGEST_DLQ_RETRY_BUDGET"`
}

// Forward configures forwarding.
type Forward struct {
	DefaultTarget string        `yaml:"default_target" env:"EVENTCENTER_FORWARD_DEFAULT_TARGET"`
	MaxAttempts   int           `yaml:"max_attempts" env:"EVENTCENTER_FORWARD_MAX_ATTEMPTS"`
	BackoffBase   time.Duration `yaml:"backoff_base" env:"EVENTCENTER_FORWARD_BACKOFF_BASE"`
	BackoffCap    time.Duration `yaml:"backoff_cap" env:"EVENTCENTER_FORWARD_BACKOFF_CAP"`
	ScanInterval  time.Duration `yaml:"scan_interval" env:"EVENTCENTER_FORWARD_SCAN_INTERVAL"`
	Lease         time.Duration `yaml:"lease" env:"EVENTCENTER_FORWARD_LEASE"`
	// SendTimeout bounds one send to a target; it must be shorter than lease.
	SendTimeout time.Duration `yaml:"send_timeout" env:"EVENTCENTER_FORWARD_SEND_TIMEOUT"`
	// InlineTimeout bounds an inline send: what a store transaction makes
	// sendable is sent before the write and written sent at once
	// (forwarder.Config.InlineTimeout); negative turns inline sends off. It
	// must be shorter than lease.
	InlineTimeout time.Duration `yaml:"inline_timeout" env:"EVENTCENTER_FORWARD_INLINE_TIMEOUT"`
	// MaxDelay bounds a scheduled message (ec-deliver-at, ec-delay): at
	// most this far after its PREPARE's record time, else the PREPARE is
	// dead-lettered (docs/scheduled.md). Default 90 days.
	MaxDelay time.Duration `yaml:"max_delay" env:"EVENTCENTER_FORWARD_MAX_DELAY"`
	Targets  []Target      `yaml:"targets"`
	// Order configures per-key order (docs/ordering.md).
	Order Order `yaml:"order"`
	// FairClaims makes the forwarder's claims serve bizIDs in turn, by
	// weight (docs/fairness.md); false claims the oldest due messages
	// first, as before. Default true.
	FairClaims bool `yaml:"fair_claims" env:"EVENTCENTER_FORWARD_FAIR_CLAIMS"`
	// Biz are the per-bizID weights and limits (ForwardBiz).
	Biz []ForwardBiz `yaml:"biz"`
}

// Order configures per-key order.
type Order struct {
	// Dead is what a message that goes DEAD does to its order key by
	// default: "hold" (the later messages wait for an operator; the
	// default) or "skip" (they go on).
	Dead string `yaml:"dead" env:"EVENTCENTER_FORWARD_ORDER_DEAD"`
	// Biz overrides Dead per bizID and can order a bizID by forward key.
	Biz []OrderBiz `yaml:"biz"`
}

// OrderBiz is the order setting of one bizID.
type OrderBiz struct {
	BizID string `yaml:"biz_id"`
	// Dead overrides Order.Dead ("" keeps it).
	Dead string `yaml:"dead"`
	// ByForwardKey orders the bizID's messages without an ec-order-key by
	// their forward key.
	ByForwardKey bool `yaml:"by_forward_key"`
}

// ReleaseOnDead tells whether a DEAD message of bizID releases its order
// key (setting "skip").
func (o Order) ReleaseOnDead(bizID string) bool {
	d := o.Dead
	for _, b := range o.Biz {
		if b.BizID == bizID && b.Dead != "" {
			d = b.Dead
		}
	}
	return d == "skip"
}

// ByForwardKey tells whether bizID is ordered by forward key.
func (o Order) ByForwardKey(bizID string) bool {
	for _, b := range o.Biz {
		if b.BizID == bizID {
			return b.ByForwardKey
		}
	}
	return false
}

// Target is one named forward target.
type Target struct {
	Name string `yaml:"name"`
	// Type is "kafka" or "rocketmq".
	Type string `yaml:"type"`
	// Brokers (kafka) default to kafka.brokers.
	Brokers []string `yaml:"brokers"`
	// AutoCreateTopics lets the Kafka target create missing business topics.
	AutoCreateTopics bool `yaml:"auto_create_topics"`
	// NameServers (rocketmq) are ip:port literals.
	NameServers []string `yaml:"name_servers"`
	// Group is the RocketMQ producer group.
	Group string `yaml:"group"`
	// MaxMessageBytes is the largest message the target's producer sends:
	// for Kafka the batch limit of a large record (set it to at most the
	// forward topics' max.message.bytes), for RocketMQ the body limit (the
	// brokers' maxMessageSize). 0 means: Kafka, ingest.max_payload_bytes
	// plus RecordOverhead (at least 1 MiB plus RecordOverhead); RocketMQ,
	// 4 MiB. It must fit every message ingest accepts (see
	// MinMessageBytes).
	MaxMessageBytes int `yaml:"max_message_bytes"`
	// Compression is a Kafka target's codec, as kafka.compression ("":
	// gzip, which every mainstream consumer reads without a codec
	// package; KafkaJS 2.x reads no snappy, franz-go's own default).
	Compression string `yaml:"compression"`
	// Auth is the target's tls and sasl (kafka; see security.go).
	Auth kafkaauth.Config `yaml:",inline"`
	// ACL is the target's access_key, secret_key (rocketmq).
	ACL RocketMQACL `yaml:",inline"`
}

// Sizes that tie ingest's payload limit to the producers' (checked against
// ingest and the targets by app/center's tests).
const (
	// RecordOverhead is what a forwarded Kafka record may take beyond the
	// payload: ingest.RecordOverhead (64 KiB of forward key, headers and
	// id) plus kafka.RecordFraming (2 KiB).
	RecordOverhead = 64<<10 + 2<<10
	// RocketMQMaxMessageBytes is rocketmq.DefaultMaxMessageBytes.
	RocketMQMaxMessageBytes = 4 << 20
	// MaxControlPartitions bounds kafka.control_partitions (and dev's
	// --partitions): the partition count bounds how many instances share
	// the work, and no deployment runs a thousand; beyond that a created
	// topic only costs (each partition is files on every broker, a fetch
	// slot of every instance, and with dev a directory of segment files
	// the embedded broker opens at start).
	MaxControlPartitions = 1000
	// MaxPayloadBytes is the largest ingest.max_payload_bytes
	// (ingest.MaxMaxPayload).
	MaxPayloadBytes = 1<<30 - 64<<10 - 8<<10
)

// MinMessageBytes is the smallest max_message_bytes of a target of the
// given type that can send every message ingest accepts.
func (c *Config) MinMessageBytes(typ string) int {
	if typ == "rocketmq" {
		return c.Ingest.MaxPayloadBytes
	}
	return c.Ingest.MaxPayloadBytes + RecordOverhead
}

// MessageBytes is target t's max_message_bytes, or its default.
func (c *Config) MessageBytes(t Target) int {
	switch {
	case t.MaxMessageBytes != 0:
		return t.MaxMessageBytes
	case t.Type == "rocketmq":
		return RocketMQMaxMessageBytes
	}
	// Never below the default: a Kafka target batches small records
	// within min(1,000,012, this), and a small payload limit should not
	// shrink its batches.
	return max(c.MinMessageBytes(t.Type), 1<<20+RecordOverhead)
}

// Checkback configures check-backs.
type Checkback struct {
	Policy              `yaml:",inline"`
	Workers             int `yaml:"workers" env:"EVENTCENTER_CHECKBACK_WORKERS"`
	EndpointConcurrency int `yaml:"endpoint_concurrency" env:"EVENTCENTER_CHECKBACK_ENDPOINT_CONCURRENCY"`
	// BizWorkers bounds the calls one bizID may have running (0: 3/4 of
	// workers), so one bizID's slow endpoints never hold every worker.
	BizWorkers int     `yaml:"biz_workers" env:"EVENTCENTER_CHECKBACK_BIZ_WORKERS"`
	Breaker    Breaker `yaml:"breaker"`
	// Lease is how long claimed check-backs stay claimed; a call lost with
	// a crashed instance is retried by another after it. It must be at
	// least 3 × the longest timeout.
	Lease time.Duration `yaml:"lease" env:"EVENTCENTER_CHECKBACK_LEASE"`
	// Allow lists check-back endpoints allowed for every bizID: exact
	// origins (http://10.0.0.1:8080) or URL prefixes. Nothing else is called.
	Allow []string `yaml:"allow" env:"EVENTCENTER_CHECKBACK_ALLOW" envSeparator:","`
	Biz   []Biz    `yaml:"biz"`
}

// Policy is the check-back timing; zero fields inherit.
type Policy struct {
	FirstDelay  time.Duration `yaml:"first_delay" env:"EVENTCENTER_CHECKBACK_FIRST_DELAY"`
	BackoffBase time.Duration `yaml:"backoff_base" env:"EVENTCENTER_CHECKBACK_BACKOFF_BASE"`
	BackoffCap  time.Duration `yaml:"backoff_cap" env:"EVENTCENTER_CHECKBACK_BACKOFF_CAP"`
	MaxAttempts int           `yaml:"max_attempts" env:"EVENTCENTER_CHECKBACK_MAX_ATTEMPTS"`
	Timeout     time.Duration `yaml:"timeout" env:"EVENTCENTER_CHECKBACK_TIMEOUT"`
}

// Breaker pauses an endpoint that keeps failing: it opens when calls for
// Failures distinct message keys fail in a row (no answer in time, a
// transport error, HTTP 5xx or 429; answers given for one key, however bad,
// never count) and lets one probe through after Cooldown.
type Breaker struct {
	Failures int           `yaml:"failures"`
	Cooldown time.Duration `yaml:"cooldown"`
}

// Biz is the check-back configuration of one bizID.
type Biz struct {
	BizID  string `yaml:"biz_id"`
	Policy `yaml:",inline"`
	// Endpoint is used when the envelope names none; with force_endpoint
	// it is always used.
	Endpoint      string   `yaml:"endpoint"`
	ForceEndpoint bool     `yaml:"force_endpoint"`
	Allow         []string `yaml:"allow"`
	// Secret signs check-back requests (HMAC-SHA256).
	Secret string `yaml:"secret"`
	// SecretFile holds the secret instead of Secret; SecretEnv names an
	// environment variable that does (see security.go).
	SecretFile string `yaml:"secret_file"`
	SecretEnv  string `yaml:"secret_env"`
	// SignV1 adds the legacy v1 signature next to v2 for producers not yet
	// upgraded (verifier.BizConfig.SignV1); for the transition only.
	SignV1 bool `yaml:"sign_v1"`
	// Weight is the bizID's share of check-back claims and workers
	// against the others (0: 1).
	Weight int `yaml:"weight"`
	// Rate bounds the bizID's check-back calls per second (0: none), a
	// token bucket of Burst (0: the rate rounded up). Over it check-backs
	// wait; no attempt is spent.
	Rate  float64 `yaml:"rate"`
	Burst int     `yaml:"burst"`
}

// Retention configures the purge of terminal messages.
type Retention struct {
	Period   time.Duration `yaml:"period" env:"EVENTCENTER_RETENTION_PERIOD"`
	Interval time.Duration `yaml:"interval" env:"EVENTCENTER_RETENTION_INTERVAL"`
	Batch    int           `yaml:"batch" env:"EVENTCENTER_RETENTION_BATCH"`
	// AuditPeriod is how long audit records are kept, whatever became of
	// their message (0 keeps them forever).
	AuditPeriod time.Duration `yaml:"audit_period" env:"EVENTCENTER_RETENTION_AUDIT_PERIOD"`
}

// Log configures log/slog.
type Log struct {
	Level  string `yaml:"level" env:"EVENTCENTER_LOG_LEVEL"`
	Format string `yaml:"format" env:"EVENTCENTER_LOG_FORMAT"`
}

// Default returns the built-in defaults. What a component also defaults
// comes from the component's own Default* constants (ingest, forwarder,
// verifier, retention), the one home of each value: a zero field passed to
// the component and the binary's default are the same by construction. What
// only the binary has (Kafka session, store, HTTP, log) is defaulted here.
func Default() Config {
	return Config{
		Kafka: Kafka{Brokers: []string{"127.0.0.1:9092"}, ControlTopic: ingest.DefaultControlTopic, Group: ingest.DefaultGroup,
			ClientID: "eventcenter", SessionTimeout: 45 * time.Second, ControlPartitions: 8},
		Store: Store{Driver: "postgres", MaxConns: 8},
		HTTP: HTTP{Listen: "127.0.0.1:8080", ReadTimeout: 30 * time.Second, WriteTimeout: 2 * time.Minute,
			IdleTimeout: 2 * time.Minute, MaxConcurrent: 64},
		Ingest: Ingest{MaxPayloadBytes: ingest.DefaultMaxPayload, SendLease: forwarder.DefaultLease,
			Parallelism: ingest.DefaultParallelism, MinApplyRecords: ingest.DefaultMinApply,
			FreshFetchWait: ingest.DefaultFreshFetchWait},
		Forward: Forward{
			DefaultTarget: "kafka", MaxAttempts: forwarder.DefaultMaxAttempts,
			BackoffBase: forwarder.DefaultBackoffBase, BackoffCap: forwarder.DefaultBackoffCap,
			ScanInterval: forwarder.DefaultScanInterval, Lease: forwarder.DefaultLease, SendTimeout: forwarder.DefaultSendTimeout,
			InlineTimeout: forwarder.DefaultInlineTimeout, MaxDelay: ingest.DefaultMaxDelay,
			Targets:    []Target{{Name: "kafka", Type: "kafka"}},
			Order:      Order{Dead: "hold"},
			FairClaims: true,
		},
		Checkback: Checkback{
			Policy: Policy{FirstDelay: verifier.DefaultFirstDelay, BackoffBase: verifier.DefaultBackoffBase,
				BackoffCap: verifier.DefaultBackoffCap, MaxAttempts: verifier.DefaultMaxAttempts, Timeout: verifier.DefaultTimeout},
			Workers: verifier.DefaultWorkers, EndpointConcurrency: verifier.DefaultEndpointConcurrency, Lease: verifier.DefaultLease,
			Breaker: Breaker{Failures: verifier.DefaultBreakerFailures, Cooldown: verifier.DefaultBreakerCoolDown},
		},
		Retention: Retention{Period: retention.DefaultPeriod, Interval: retention.DefaultInterval, Batch: retention.DefaultBatch, AuditPeriod: DefaultAuditPeriod},
		Log:       Log{Level: "info", Format: "text"},
		Ingress:   defaultIngress(),
	}
}

// Load reads defaults, then the YAML file (if path is not empty), then the
// environment, and validates the result.
func Load(path string) (Config, error) {
	cfg := Default()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("read config: %w", err)
		}
		if err := Parse(data, &cfg); err != nil {
			return cfg, fmt.Errorf("config %s: %w", path, err)
		}
	}
	if err := ApplyEnv(&cfg); err != nil {
		return cfg, err
	}
	if err := cfg.ResolveSecrets(); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// Parse decodes YAML over cfg; unknown keys are errors.
func Parse(data []byte, cfg *Config) error {
	// Targets given in the file replace the default list rather than
	// merging into it element by element.
	var probe struct {
		Forward struct {
			Targets []Target `yaml:"targets"`
		} `yaml:"forward"`
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("parse yaml: %w", err)
	}
	// Unknown keys and values of the wrong kind, named by YAML path (the
	// decoder's own messages name Go types).
	if err := checkYAML(&doc); err != nil {
		return err
	}
	_ = yaml.Unmarshal(data, &probe)
	if probe.Forward.Targets != nil {
		cfg.Forward.Targets = nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("parse yaml: %w", err)
	}
	return nil
}

// ApplyEnv overrides cfg with the EVENTCENTER_* variables that are set.
func ApplyEnv(cfg *Config) error {
	// One variable at a time, so an error names the variable (the
	// library's own errors name the Go field and type).
	params, err := env.GetFieldParams(&Config{})
	if err != nil {
		return fmt.Errorf("environment: %w", err)
	}
	var errs []error
	for _, p := range params {
		v, ok := os.LookupEnv(p.Key)
		if !ok || v == "" {
			continue
		}
		if err := env.ParseWithOptions(cfg, env.Options{Environment: map[string]string{p.Key: v}}); err != nil {
			errs = append(errs, fmt.Errorf("environment: %s: %s", p.Key, envProblem(err, v)))
			continue
		}
		if path, ok := envPaths()[p.Key]; ok {
			cfg.setSource(path, p.Key)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	applySecretEnv(cfg)
	if cfg.Admin.TokensEnv != "" {
		for i, part := range strings.Split(cfg.Admin.TokensEnv, ",") {
			name, rest, ok1 := strings.Cut(strings.TrimSpace(part), ":")
			scope, tok, ok2 := strings.Cut(rest, ":")
			if !ok1 || !ok2 {
				// The entry holds a secret: say where, not what.
				return fmt.Errorf("environment: EVENTCENTER_ADMIN_TOKENS: entry %d is not name:scope:token (want name:scope:token[,...])", i+1)
			}
			cfg.Admin.Tokens = append(cfg.Admin.Tokens, Token{Name: name, Scope: scope, Token: tok})
		}
	}
	return nil
}

// SetByFlag records that the field at the YAML path was set by the
// command-line flag (e.g. "--http-listen"), over what the file or the
// environment said: Validate names the flag for it.
func (c *Config) SetByFlag(path, flag string) { c.setSource(path, flag) }

func (c *Config) setSource(path, from string) {
	if c.source == nil {
		c.source = map[string]string{}
	}
	c.source[path] = from
}

// envPaths maps each EVENTCENTER_* variable to the YAML path of its field.
var envPaths = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			path := prefix
			switch {
			case name == "-":
				path = ""
			case opts == "inline":
			case name != "":
				path = strings.TrimPrefix(prefix+"."+name, ".")
			default:
				path = strings.TrimPrefix(prefix+"."+strings.ToLower(f.Name), ".")
			}
			if key, _, _ := strings.Cut(f.Tag.Get("env"), ","); key != "" && path != "" {
				m[key] = path
			}
			if f.Type.Kind() == reflect.Struct && path != "" || opts == "inline" {
				walk(f.Type, path)
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
	return m
})

// envProblem says what is wrong with the value v of a variable, in terms
// of what it should be.
func envProblem(err error, v string) string {
	var pe env.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("want %s, got %q", want(pe.Type), v)
	}
	return fmt.Sprintf("cannot use %q", v)
}

// LoopbackListen tells whether a listen address (host:port) accepts
// connections from this host only: localhost, 127.0.0.0/8 or ::1. An empty
// host listens on every interface.
func LoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// DLQ returns the dead-letter topic.
func (k Kafka) DLQ() string {
	if k.DLQTopic != "" {
		return k.DLQTopic
	}
	return k.ControlTopic + ".dlq"
}

// Validate checks every field and names the bad ones.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		if from, ok := c.source[field]; ok {
			field += " (from " + from + ")"
		}
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if len(c.Kafka.Brokers) == 0 {
		bad("kafka.brokers", "at least one broker address is required")
	}
	for i, b := range c.Kafka.Brokers {
		if !hostPort(b) {
			bad(fmt.Sprintf("kafka.brokers[%d]", i), "%q is not host:port", b)
		}
	}
	if c.Kafka.ControlTopic == "" {
		bad("kafka.control_topic", "is required")
	} else if err := kafka.CheckTopic(c.Kafka.ControlTopic); err != nil {
		bad("kafka.control_topic", "%v", err)
	} else if err := kafka.CheckTopic(c.Kafka.DLQ()); err != nil && c.Kafka.DLQTopic == "" {
		bad("kafka.control_topic", "the dead-letter topic named after it (kafka.dlq_topic's default): %v", err)
	}
	if c.Kafka.DLQTopic != "" {
		if err := kafka.CheckTopic(c.Kafka.DLQTopic); err != nil {
			bad("kafka.dlq_topic", "%v", err)
		}
	}
	if c.Kafka.DLQTopic != "" && c.Kafka.DLQTopic == c.Kafka.ControlTopic {
		bad("kafka.dlq_topic", "must differ from kafka.control_topic %q", c.Kafka.ControlTopic)
	}
	if c.Kafka.Group == "" {
		bad("kafka.group", "is required")
	}
	if c.Kafka.SessionTimeout < time.Second {
		bad("kafka.session_timeout", "must be at least 1s")
	}
	if c.Kafka.MetadataMaxAge != 0 && c.Kafka.MetadataMaxAge < time.Second {
		bad("kafka.metadata_max_age", "must be 0 (default) or at least 1s")
	}
	if _, err := kafkarec.Compression(c.Kafka.Compression); err != nil {
		bad("kafka.compression", "%v", err)
	}
	if c.Kafka.ControlPartitions < 1 || c.Kafka.ControlPartitions > MaxControlPartitions {
		bad("kafka.control_partitions", "must be 1 to %d, got %d", MaxControlPartitions, c.Kafka.ControlPartitions)
	}
	switch c.Store.Driver {
	case "postgres":
		if u, err := url.Parse(c.Store.DSN); c.Store.DSN == "" || err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			bad("store.dsn", "want a postgres:// URL, got %q", redact(c.Store.DSN))
		}
	case "mysql":
		if mc, err := gomysql.ParseDSN(c.Store.DSN); c.Store.DSN == "" || err != nil || mc.DBName == "" {
			bad("store.dsn", "want a MySQL DSN user:password@tcp(host:3306)/dbname, got %q", redactMySQL(c.Store.DSN))
		}
	case "sqlite":
		if c.Store.DSN == "" {
			bad("store.dsn", "want a SQLite file path")
		}
	case "sharded":
		validateShards(c.Store.Shards, bad)
	default:
		bad("store.driver", "want postgres, mysql, sqlite or sharded, got %q", c.Store.Driver)
	}
	if c.Store.Driver != "sharded" && len(c.Store.Shards) > 0 {
		bad("store.shards", "is for store.driver sharded only")
	}
	if c.Store.MaxConns < 1 {
		bad("store.max_conns", "must be at least 1")
	}
	if c.HTTP.Listen == "" {
		bad("http.listen", "is required (host:port)")
	} else if err := checkListen(c.HTTP.Listen); err != nil {
		bad("http.listen", "%v", err)
	}
	for _, d := range []struct {
		f string
		d time.Duration
	}{{"http.read_timeout", c.HTTP.ReadTimeout}, {"http.write_timeout", c.HTTP.WriteTimeout}, {"http.idle_timeout", c.HTTP.IdleTimeout}} {
		if d.d <= 0 {
			bad(d.f, "must be positive, got %s", d.d)
		}
	}
	if c.HTTP.MaxConcurrent < 1 {
		bad("http.max_concurrent", "must be at least 1")
	}
	if c.Admin.Insecure && len(c.Admin.Tokens) == 0 && c.HTTP.Listen != "" && !LoopbackListen(c.HTTP.Listen) {
		bad("admin.insecure", "opens the admin API without tokens and is refused on http.listen %s, which is reachable from other hosts: configure admin.tokens, or listen on 127.0.0.1", c.HTTP.Listen)
	}
	tokenNames, secrets := map[string]bool{}, map[string]bool{}
	for i, t := range c.Admin.Tokens {
		f := fmt.Sprintf("admin.tokens[%d]", i)
		switch {
		case strings.TrimSpace(t.Name) == "":
			bad(f+".name", "is required")
		case tokenNames[t.Name]:
			bad(f+".name", "%q is used by another token", t.Name)
		}
		tokenNames[t.Name] = true
		switch {
		case len(t.Token) < 16:
			bad(f+".token", "must be at least 16 characters")
		case secrets[t.Token]:
			bad(f+".token", "same secret as another token")
		}
		secrets[t.Token] = true
		if t.Scope != "read" && t.Scope != "admin" {
			bad(f+".scope", "want read or admin, got %q", t.Scope)
		}
	}
	if c.Ingest.MaxPayloadBytes < 1 || c.Ingest.MaxPayloadBytes > MaxPayloadBytes {
		bad("ingest.max_payload_bytes", "must be 1 to %d", MaxPayloadBytes)
	}
	if c.Ingest.DLQRetryBudget < 0 {
		bad("ingest.dlq_retry_budget", "must not be negative (0 means 30s)")
	}
	if c.Ingest.SendLease < time.Second {
		bad("ingest.send_lease", "must be at least 1s")
	}
	if c.Ingest.Parallelism < 1 {
		bad("ingest.parallelism", "must be at least 1")
	}
	if c.Ingest.MinApplyRecords < 1 {
		bad("ingest.min_apply_records", "must be at least 1")
	}
	if c.Ingest.FreshFetchWait >= time.Second {
		bad("ingest.fresh_fetch_wait", "must be under 1s (it delays every batch that waits in full; negative: no wait)")
	}
	c.validateForward(bad)
	c.validateFair(bad)
	c.validateLanes(bad)
	c.validateCheckback(bad)
	c.validateSecurity(bad)
	c.validateIngress(bad)
	if c.Retention.Period < 0 {
		bad("retention.period", "must not be negative (0 keeps everything)")
	}
	if c.Retention.Interval <= 0 {
		bad("retention.interval", "must be positive")
	}
	if c.Retention.Batch < 1 {
		bad("retention.batch", "must be at least 1")
	}
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "want debug, info, warn or error, got %q", c.Log.Level)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		bad("log.format", "want text or json, got %q", c.Log.Format)
	}
	return errors.Join(errs...)
}

func (c *Config) validateForward(bad func(string, string, ...any)) {
	f := c.Forward
	if f.MaxAttempts < 1 {
		bad("forward.max_attempts", "must be at least 1")
	}
	if f.BackoffBase <= 0 || f.BackoffCap < f.BackoffBase {
		bad("forward.backoff_base", "must be positive and not above forward.backoff_cap")
	}
	if f.ScanInterval <= 0 {
		bad("forward.scan_interval", "must be positive")
	}
	if f.MaxDelay <= 0 || f.MaxDelay > envelope.MaxDelay {
		bad("forward.max_delay", "must be within (0, %v]", envelope.MaxDelay)
	}
	if f.Lease < time.Second {
		bad("forward.lease", "must be at least 1s")
	}
	if f.SendTimeout <= 0 || f.SendTimeout >= f.Lease {
		bad("forward.send_timeout", "must be positive and shorter than forward.lease (%s)", f.Lease)
	}
	if f.InlineTimeout == 0 || f.InlineTimeout >= f.Lease {
		bad("forward.inline_timeout", "must be shorter than forward.lease (%s), and not 0 (negative turns inline sends off)", f.Lease)
	}
	if f.Order.Dead != "" && f.Order.Dead != "hold" && f.Order.Dead != "skip" {
		bad("forward.order.dead", "must be hold or skip, not %q", f.Order.Dead)
	}
	for i, b := range f.Order.Biz {
		if b.BizID == "" {
			bad(fmt.Sprintf("forward.order.biz[%d].biz_id", i), "required")
		}
		if b.Dead != "" && b.Dead != "hold" && b.Dead != "skip" {
			bad(fmt.Sprintf("forward.order.biz[%d].dead", i), "must be hold or skip, not %q", b.Dead)
		}
	}
	names := map[string]bool{}
	for i, t := range f.Targets {
		field := fmt.Sprintf("forward.targets[%d]", i)
		if t.Name == "" {
			bad(field+".name", "is required")
		}
		if names[t.Name] {
			bad(field+".name", "duplicate target %q", t.Name)
		}
		names[t.Name] = true
		switch t.Type {
		case "kafka":
			for j, b := range t.Brokers {
				if !hostPort(b) {
					bad(fmt.Sprintf("%s.brokers[%d]", field, j), "%q is not host:port", b)
				}
			}
			if _, err := kafkarec.Compression(t.Compression); err != nil {
				bad(field+".compression", "%v", err)
			}
		case "rocketmq":
			if len(t.NameServers) == 0 {
				bad(field+".name_servers", "at least one ip:port is required for a rocketmq target")
			}
			for j, a := range t.NameServers {
				if err := checkNameServer(a); err != nil {
					bad(fmt.Sprintf("%s.name_servers[%d]", field, j), "%v", err)
				}
			}
			if t.Compression != "" {
				bad(field+".compression", "is for kafka targets")
			}
			if t.Group != "" && (len(t.Group) > 255 || !rocketmqGroup.MatchString(t.Group)) {
				bad(field+".group", "%q must be 1 to 255 characters of letters, digits, %%, |, _ and -", t.Group)
			}
		default:
			bad(field+".type", "want kafka or rocketmq, got %q", t.Type)
		}
		c.validateMessageBytes(field, t, bad)
	}
	if !names[f.DefaultTarget] {
		bad("forward.default_target", "%q is not one of forward.targets", f.DefaultTarget)
	}
}

// validateMessageBytes checks that target t can send every message ingest
// accepts.
func (c *Config) validateMessageBytes(field string, t Target, bad func(string, string, ...any)) {
	if t.Type != "kafka" && t.Type != "rocketmq" {
		return
	}
	n, least := c.MessageBytes(t), c.MinMessageBytes(t.Type)
	switch {
	case t.MaxMessageBytes < 0:
		bad(field+".max_message_bytes", "must not be negative (0 means the default)")
	case t.Type == "kafka" && n > 1<<30:
		bad(field+".max_message_bytes", "must be at most %d (franz-go's largest batch), got %d", 1<<30, n)
	case n < least && t.Type == "kafka":
		// Lowering the payload limit is a fix only when n leaves room for
		// a payload of at least one byte after the overhead.
		lower := fmt.Sprintf(" or lower ingest.max_payload_bytes to at most %d", n-RecordOverhead)
		if n-RecordOverhead < 1 {
			lower = fmt.Sprintf(" (%d leaves no room for a payload after the %d bytes)", n, RecordOverhead)
		}
		bad(field+".max_message_bytes", "%d is below ingest.max_payload_bytes (%d) + %d bytes of forward key, headers, id and framing: a message ingest accepts could never be sent; raise it to at least %d (and the forward topics' max.message.bytes)%s",
			n, c.Ingest.MaxPayloadBytes, RecordOverhead, least, lower)
	case n < least:
		what := "set"
		if t.MaxMessageBytes == 0 {
			what = "defaults to RocketMQ's 4 MiB, which is"
		}
		bad(field+".max_message_bytes", "%s %d, below ingest.max_payload_bytes (%d): a message ingest accepts could never be sent; raise the brokers' maxMessageSize and this, or lower ingest.max_payload_bytes", what, n, c.Ingest.MaxPayloadBytes)
	}
}

func (c *Config) validateCheckback(bad func(string, string, ...any)) {
	cb := c.Checkback
	validatePolicy("checkback", cb.Policy, false, bad)
	if cb.Workers < 1 {
		bad("checkback.workers", "must be at least 1")
	}
	if cb.BackoffCap < cb.BackoffBase {
		bad("checkback.backoff_cap", "must not be below checkback.backoff_base (%s)", cb.BackoffBase)
	}
	// The lease covers the longest timeout of any bizID.
	timeout, timeoutField := cb.Timeout, "checkback.timeout"
	for i, b := range cb.Biz {
		if b.Timeout > timeout {
			timeout, timeoutField = b.Timeout, fmt.Sprintf("checkback.biz[%d].timeout", i)
		}
	}
	if cb.Lease < 3*timeout {
		bad("checkback.lease", "must be at least 3 × %s (%s)", timeoutField, 3*timeout)
	}
	if cb.EndpointConcurrency < 1 {
		bad("checkback.endpoint_concurrency", "must be at least 1")
	}
	if cb.Workers >= 1 && cb.EndpointConcurrency > cb.Workers {
		bad("checkback.endpoint_concurrency", "%d exceeds checkback.workers (%d)", cb.EndpointConcurrency, cb.Workers)
	}
	checkAllow("checkback.allow", cb.Allow, bad)
	if cb.BizWorkers < 0 || (cb.Workers > 0 && cb.BizWorkers > cb.Workers) {
		bad("checkback.biz_workers", "must be between 0 (3/4 of workers) and checkback.workers (%d)", cb.Workers)
	}
	if cb.Breaker.Failures < 1 || cb.Breaker.Cooldown <= 0 {
		bad("checkback.breaker", "failures must be at least 1 and cooldown positive")
	}
	seen := map[string]bool{}
	for i, b := range cb.Biz {
		field := fmt.Sprintf("checkback.biz[%d]", i)
		if b.BizID == "" || strings.Contains(b.BizID, ":") {
			bad(field+".biz_id", "is required and must not contain ':'")
		}
		if seen[b.BizID] {
			bad(field+".biz_id", "duplicate bizID %q", b.BizID)
		}
		seen[b.BizID] = true
		validatePolicy(field, b.Policy, true, bad)
		base, capped := cmp.Or(b.BackoffBase, cb.BackoffBase), cmp.Or(b.BackoffCap, cb.BackoffCap)
		if (b.BackoffBase != 0 || b.BackoffCap != 0) && capped < base {
			bad(field+".backoff_cap", "%s is below the bizID's backoff_base %s (unset values inherit checkback's)", capped, base)
		}
		checkAllow(field+".allow", b.Allow, bad)
		validateBizFairness(field, b, bad)
		if b.Endpoint != "" {
			if _, err := checkback.ParseEndpoint(b.Endpoint); err != nil {
				bad(field+".endpoint", "%v", err)
			}
		} else if b.ForceEndpoint {
			bad(field+".force_endpoint", "is set without an endpoint")
		}
	}
}

// checkAllow checks the entries of a check-back allow list.
func checkAllow(field string, list []string, bad func(string, string, ...any)) {
	for i, s := range list {
		if err := verifier.CheckAllowEntry(s); err != nil {
			bad(fmt.Sprintf("%s[%d]", field, i), "%q: %v", s, err)
		}
	}
}

// hostPort reports whether a is host:port with a port from 1 to 65535 (a
// Kafka broker address).
func hostPort(a string) bool {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p >= 1 && p <= 65535
}

// checkListen accepts a listen address host:port (host may be empty: all
// interfaces) with a numeric port from 0 (any free port) to 65535.
func checkListen(a string) error {
	_, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("%q is not host:port (want e.g. 127.0.0.1:8080 or :8080)", a)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q: port %q must be a number from 0 to 65535", a, port)
	}
	return nil
}

// rocketmqGroup is what the RocketMQ target accepts as a producer group.
var rocketmqGroup = regexp.MustCompile(`^[%|a-zA-Z0-9_-]+$`)

// checkNameServer accepts "ip:port" with an IP literal (IPv6 in
// brackets), as the RocketMQ target does.
func checkNameServer(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("%q is not ip:port", a)
	}
	if net.ParseIP(host) == nil {
		return fmt.Errorf("%q: host %q must be an IP literal (the RocketMQ client does not resolve names)", a, host)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: port %q must be 1-65535", a, port)
	}
	return nil
}

func validatePolicy(field string, p Policy, partial bool, bad func(string, string, ...any)) {
	check := func(name string, d time.Duration) {
		if d < 0 || (!partial && d == 0) {
			bad(field+"."+name, "must be positive")
		}
	}
	check("backoff_base", p.BackoffBase)
	check("backoff_cap", p.BackoffCap)
	check("timeout", p.Timeout)
	if p.FirstDelay < 0 {
		bad(field+".first_delay", "must not be negative")
	}
	if p.MaxAttempts < 0 || (!partial && p.MaxAttempts == 0) {
		bad(field+".max_attempts", "must be at least 1")
	}
}

// redactMySQL hides the password of a MySQL DSN (everything before the
// last "@" when the DSN does not parse).
func redactMySQL(dsn string) string {
	mc, err := gomysql.ParseDSN(dsn)
	if err != nil {
		if i := strings.LastIndex(dsn, "@"); i >= 0 {
			return "xxxxx" + dsn[i:]
		}
		return dsn
	}
	if mc.Passwd != "" {
		mc.Passwd = "xxxxx"
	}
	return mc.FormatDSN()
}

func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		// A password with characters a URL does not allow (#, /, ...)
		// makes the URL unparsable: hide what lies between "user:" and
		// the last "@".
		if i, j := strings.Index(dsn, "://"), strings.LastIndex(dsn, "@"); i >= 0 && j > i {
			userinfo := dsn[i+3 : j]
			if user, _, ok := strings.Cut(userinfo, ":"); ok {
				return redactKeywords(dsn[:i+3] + user + ":xxxxx" + dsn[j:])
			}
		}
		return redactKeywords(dsn)
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	if q := u.Query(); len(q) > 0 {
		changed := false
		for k := range q {
			if secretParam(k) {
				q.Set(k, "xxxxx")
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	if u.Scheme == "" && u.User == nil {
		// Not a URL (a file path, or PostgreSQL's keyword=value form).
		return redactKeywords(dsn)
	}
	return u.String()
}

// secretParam reports whether a DSN parameter holds a secret
// (PostgreSQL's password and sslpassword, and the like).
func secretParam(k string) bool {
	k = strings.ToLower(k)
	return strings.Contains(k, "password") || strings.Contains(k, "passwd") || strings.Contains(k, "secret")
}

// keywordSecret matches "password=value" in a keyword=value DSN (the value
// possibly single-quoted).
var keywordSecret = regexp.MustCompile(`(?i)\b([a-z_]*(?:password|passwd|secret)[a-z_]*)\s*=\s*('(?:[^'\\]|\\.)*'|[^\s&;]*)`)

func redactKeywords(dsn string) string {
	return keywordSecret.ReplaceAllString(dsn, "${1}=xxxxx")
}

// RedactDSN returns dsn of the given store driver with every password
// replaced by xxxxx, for messages and banners: a PostgreSQL URL or
// keyword=value string, a MySQL DSN or a SQLite path (or file: URI).
func RedactDSN(driver, dsn string) string {
	if driver == "mysql" {
		return redactMySQL(dsn)
	}
	return redact(dsn)
}

// DriverName is the display name of a store driver: PostgreSQL, MySQL,
// SQLite, or "sharded PostgreSQL".
func DriverName(driver string) string {
	switch driver {
	case "postgres":
		return "PostgreSQL"
	case "mysql":
		return "MySQL"
	case "sqlite":
		return "SQLite"
	case "sharded":
		return "sharded PostgreSQL"
	}
	return driver
}

// Describe says where the store is, with passwords redacted: the DSN, or
// for a sharded store each shard's.
func (s Store) Describe() string {
	if s.Driver != "sharded" {
		return RedactDSN(s.Driver, s.DSN)
	}
	parts := make([]string, len(s.Shards))
	for i, sh := range s.Shards {
		parts[i] = RedactDSN("postgres", sh.DSN)
	}
	return strings.Join(parts, ", ")
}

// validateShards checks store.shards: PostgreSQL URLs, and every bucket
// held by exactly one shard.
func validateShards(shards []StoreShard, bad func(field, format string, args ...any)) {
	if len(shards) == 0 {
		bad("store.shards", "store.driver sharded needs at least one shard")
		return
	}
	if len(shards) > sharded.MaxShards {
		bad("store.shards", "at most %d shards, got %d", sharded.MaxShards, len(shards))
		return
	}
	specs := make([]string, len(shards))
	ok := true
	for i, sh := range shards {
		f := fmt.Sprintf("store.shards[%d]", i)
		if u, err := url.Parse(sh.DSN); sh.DSN == "" || err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			bad(f+".dsn", "want a postgres:// URL, got %q", redact(sh.DSN))
		}
		if _, err := sharded.ParseBuckets(sh.Buckets); err != nil {
			bad(f+".buckets", "%v", err)
			ok = false
		}
		specs[i] = sh.Buckets
	}
	if !ok {
		return
	}
	if _, err := sharded.NewMap(specs); err != nil {
		bad("store.shards", "%v", err)
	}
}
