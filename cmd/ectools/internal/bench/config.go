package bench

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder/rocketmq"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
	"github.com/eventcenter/eventcenter/verifier"
	gomysql "github.com/go-sql-driver/mysql"
)

// Config describes one bench run. Zero fields take the defaults of
// Default; Validate names the bad field.
type Config struct {
	// Messages is the number of messages to send; with Duration set and
	// Messages 0 the run is bounded by time only.
	Messages int
	// Duration bounds the sending phase (0: until Messages are sent).
	Duration time.Duration
	// Rate is the target messages/s over all producers; 0 sends as fast as
	// the producers can.
	Rate float64
	// Payload is the payload size in bytes.
	Payload int
	// Producers is the number of clientlib producers (Kafka clients);
	// Concurrency the number of goroutines sending through each.
	Producers   int
	Concurrency int
	// RollbackRatio of the messages are rolled back; CheckbackRatio of them
	// are left PREPARED for the check-back server to commit. The rest are
	// committed with Transact.
	RollbackRatio  float64
	CheckbackRatio float64
	// OrderKeys, when positive, gives every message an order key, message
	// i key i mod OrderKeys (per-key order: docs/ordering.md); HotKey
	// gives every message the same one. Order is kept only when the
	// cluster level gate opens: with the PostgreSQL store.
	OrderKeys int
	HotKey    bool
	// ForwardKey is the forward (Kafka) key of a message with an order
	// key: ForwardKeyOrder (the default) its order key, as when an order
	// key (a shop, an account) is also what keeps the order on a Kafka
	// partition, so that a key's run is pipelined (SendInOrder);
	// ForwardKeyMessage its own message key, which spreads a key's
	// records over the partitions and sends a run head of line (one round
	// trip each). Messages without an order key are forwarded with their
	// message key.
	ForwardKey string

	// Scheduled, when positive, puts that many committed scheduled
	// messages in the center's store before the load starts (written
	// through the center's own ingest conversion and store, not through
	// Kafka: see seedScheduled), forwarded to <topic>.sched. With
	// ScheduledDueRate 0 they are held: due from an hour after the run on,
	// a backlog the load flows past. With a ScheduledDueRate they fall
	// due at that rate (messages/s), the first ScheduledLead after the
	// seeding began (0: 20 s plus 1 s per 20,000 messages), and the
	// report gives their delivery lateness.
	Scheduled        int
	ScheduledDueRate float64
	ScheduledLead    time.Duration
	// ScanInterval is the embedded center's forward.scan_interval (0: the
	// default), which bounds a scheduled message's lateness.
	ScanInterval time.Duration

	// Store is "sqlite", "postgres", "mysql" or "sharded" (DSN: PostgreSQL
	// URLs separated by commas, one shard each, buckets split evenly; the
	// store baseline measures the first); DSN the PostgreSQL URL
	// (embedded runs create and drop a fresh schema in it), the MySQL DSN
	// (they create and drop databases named <db>_bench_<run>...) or a
	// SQLite file (empty: a temporary file).
	Store string
	DSN   string
	// StoreMaxConns is the center's store.max_conns (PostgreSQL).
	StoreMaxConns int

	// Target is the embedded center's forward target: TargetKafka (the
	// default: the business topic on the Kafka brokers) or
	// TargetRocketMQ: the RocketMQ stand-in (testsupport/rocketmqfake)
	// started in process, one queue per partition, read back from its
	// memory. A RocketMQ target keeps head-of-line sends for a key's run
	// (it is no forwarder.OrderedTarget). Only the plain load: not with
	// External, Via http, Scheduled or the noisy-neighbour run.
	Target string

	// Brokers are external Kafka brokers; empty starts kfake in process.
	Brokers []string
	// External: a center already runs against Brokers (and DSN); the tool
	// only produces, answers check-backs and consumes.
	External bool
	// ControlTopic is the control topic; Topic the business topic (empty:
	// a fresh "bench.<run id>" topic); Partitions the partition count of
	// topics the tool creates.
	ControlTopic string
	Topic        string
	Partitions   int

	// CheckbackListen is where the tool's check-back server listens;
	// CheckbackURL what the messages name as endpoint (empty: derived from
	// the listener). FirstDelay is the embedded center's first check-back
	// delay (0: see Config.firstDelay); CheckbackConcurrency its
	// per-endpoint concurrency.
	CheckbackListen string
	CheckbackURL    string
	// CheckbackZooKeeper, when set (host:port), registers the check-back
	// server in that ZooKeeper as a Dubbo Triple provider of
	// ecbench.Checker and has the messages name
	// zookeeper://<it>/ecbench.Checker?protocol=tri, so that the center
	// finds the provider through the registry (its resolver's cached list).
	CheckbackZooKeeper   string
	FirstDelay           time.Duration
	CheckbackConcurrency int
	CheckbackWorkers     int

	// Baselines measures the transport and store baselines first.
	Baselines bool
	// Via is how the load reaches the center: "kafka" (clientlib
	// producers, the default) or "http": then the load runs twice on one
	// center, through Kafka producers and then through the producer HTTP
	// API, and the report compares them (Report.Via).
	Via string
	// Tracing runs the embedded center with OpenTelemetry tracing on
	// (spans recorded and batch-exported to a discard exporter, so the
	// cost is the center's, without a collector) and sends every message
	// from a sampled producer span; to compare with a run without it.
	Tracing bool
	// StoreWriters is the number of concurrent writers of the store
	// baseline (0: 2 on PostgreSQL, 1 on SQLite).
	StoreWriters int

	// BrokerRetention is retention.ms of the topics the tool creates;
	// kfake keeps records in memory (≈1.4 KB each) and drops the expired
	// ones when the tool asks it to (every 10s), so long embedded runs need
	// it short.
	BrokerRetention time.Duration

	// Noisy runs the noisy-neighbour comparison instead of the plain load
	// (see Noisy).
	Noisy Noisy

	// DrainTimeout bounds the wait for forwards after sending ended.
	DrainTimeout time.Duration
	// Progress receives a line per second while the center runs (nil: none).
	Progress io.Writer
	// Logger is the center's and the clients' logger (nil: discard).
	Logger *slog.Logger
	// CPUProfile and MemProfile, when set, receive pprof profiles of the
	// center phase (CPU) and of the heap at its end.
	CPUProfile io.Writer
	MemProfile io.Writer
	// HeapEvery is how often a heap sample (after GC) is taken (0: 10s).
	HeapEvery time.Duration

	tempDir string // set by Run
	// rmq is the RocketMQ stand-in with TargetRocketMQ: started by Run
	// unless a test gave one (then Run leaves it running).
	rmq *rocketmqfake.Server
	// centerDSN receives the embedded center's PostgreSQL DSN (set by Run).
	centerDSN *string
	// rowVersions receives the PostgreSQL row versions when the center's
	// schema is dropped (set by Run).
	rowVersions **RowVersions
}

// Default returns the defaults: 20,000 messages as fast as possible, 256
// bytes, 2 producers × 64 goroutines, SQLite, embedded, baselines on.
func Default() Config {
	return Config{
		Messages:             20000,
		Payload:              256,
		Producers:            2,
		Concurrency:          64,
		Store:                "sqlite",
		StoreMaxConns:        8,
		ControlTopic:         envelope.DefaultControlTopic,
		Partitions:           8,
		CheckbackListen:      "127.0.0.1:0",
		CheckbackConcurrency: 256,
		CheckbackWorkers:     256,
		BrokerRetention:      time.Minute,
		Baselines:            true,
		Via:                  ViaKafka,
		DrainTimeout:         2 * time.Minute,
		HeapEvery:            10 * time.Second,
		Noisy:                DefaultNoisy(),
		ForwardKey:           ForwardKeyOrder,
		Target:               TargetKafka,
	}
}

// ForwardKey values (--forward-key).
const (
	ForwardKeyOrder   = "order"
	ForwardKeyMessage = "message"
)

// Validate checks the configuration; errors name the field (as the flag).
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.Messages < 0 {
		bad("messages", "must not be negative")
	}
	if c.Duration < 0 {
		bad("duration", "must not be negative")
	}
	if c.Messages == 0 && c.Duration == 0 && (c.Scheduled == 0 || c.ScheduledDueRate == 0) {
		bad("messages", "give a message count or a duration (or only scheduled messages: --scheduled with --scheduled-due-rate)")
	}
	if c.Scheduled < 0 {
		bad("scheduled", "must not be negative")
	}
	if c.Scheduled > 0 && c.External {
		bad("scheduled", "the scheduled messages are written into the embedded center's store: not with --external")
	}
	if c.Scheduled > 0 && c.Via != ViaKafka {
		bad("scheduled", "only with --via kafka")
	}
	if c.ScheduledDueRate < 0 {
		bad("scheduled-due-rate", "must not be negative (0: held, due after the run)")
	}
	if c.ScheduledLead < 0 {
		bad("scheduled-lead", "must not be negative (0: 20 s plus 1 s per 20,000 messages)")
	}
	if c.ScanInterval < 0 {
		bad("scan-interval", "must not be negative (0: the center's default)")
	}
	if c.Rate < 0 {
		bad("rate", "must not be negative (0 = as fast as possible)")
	}
	if c.Payload < 0 {
		bad("payload", "must not be negative")
	}
	if c.Producers < 1 {
		bad("producers", "must be at least 1")
	}
	if c.Concurrency < 1 {
		bad("concurrency", "must be at least 1")
	}
	if c.OrderKeys < 0 {
		bad("order-keys", "must not be negative (0: no order keys)")
	}
	if c.HotKey && c.OrderKeys > 0 {
		bad("hot-key", "either --hot-key or --order-keys")
	}
	if c.ForwardKey != ForwardKeyOrder && c.ForwardKey != ForwardKeyMessage {
		bad("forward-key", "must be order or message")
	}
	if c.RollbackRatio < 0 || c.CheckbackRatio < 0 || c.RollbackRatio+c.CheckbackRatio > 1 {
		bad("rollback-ratio", "rollback-ratio and checkback-ratio must be ≥ 0 and add up to at most 1")
	}
	switch c.Store {
	case "sqlite":
	case "postgres":
		if u, err := url.Parse(c.DSN); c.DSN == "" || err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			bad("dsn", "a postgres:// URL is required with --store postgres")
		}
	case "mysql":
		if mc, err := gomysql.ParseDSN(c.DSN); c.DSN == "" || err != nil || mc.DBName == "" {
			bad("dsn", "a MySQL DSN user:password@tcp(host:3306)/dbname is required with --store mysql")
		}
	case "sharded":
		for i, dsn := range strings.Split(c.DSN, ",") {
			if u, err := url.Parse(dsn); dsn == "" || err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
				bad("dsn", "with --store sharded, a comma-separated list of postgres:// URLs (one per shard); entry %d is not one", i)
			}
		}
	default:
		bad("store", "want sqlite, postgres, mysql or sharded, got %q", c.Store)
	}
	if c.External && len(c.Brokers) == 0 {
		bad("brokers", "required with --external")
	}
	switch c.Via {
	case ViaKafka:
	case ViaHTTP:
		if c.External {
			bad("via", "http needs the center in process (it turns the producer API on); not with --external")
		}
	default:
		bad("via", "want kafka or http, got %q", c.Via)
	}
	c.validateTarget(bad)
	if c.ControlTopic == "" {
		bad("control-topic", "is required")
	}
	if c.Partitions < 1 {
		bad("partitions", "must be at least 1")
	}
	if c.FirstDelay < 0 {
		bad("checkback-first-delay", "must not be negative")
	}
	if c.CheckbackConcurrency < 1 || c.CheckbackWorkers < 1 {
		bad("checkback-concurrency", "checkback concurrency and workers must be at least 1")
	}
	if c.StoreWriters < 0 || c.StoreMaxConns < 1 {
		bad("store-writers", "store writers must not be negative and store max conns at least 1")
	}
	if c.BrokerRetention < time.Second {
		bad("broker-retention", "must be at least 1s")
	}
	if c.DrainTimeout <= 0 {
		bad("drain-timeout", "must be positive")
	}
	if c.HeapEvery < 0 {
		bad("heap-every", "must not be negative")
	}
	c.Noisy.validate(c, bad)
	return errors.Join(errs...)
}

// validateTarget checks Target and what a RocketMQ target rules out.
func (c *Config) validateTarget(bad func(field, format string, args ...any)) {
	switch c.Target {
	case TargetKafka:
		return
	case TargetRocketMQ:
	default:
		bad("target", "want kafka or rocketmq, got %q", c.Target)
		return
	}
	const why = "--target rocketmq runs the plain load against the center and RocketMQ stand-in in process"
	if c.External {
		bad("target", "%s: not with --external", why)
	}
	if c.Via != ViaKafka {
		bad("target", "%s: not with --via %s", why, c.Via)
	}
	if c.Scheduled > 0 {
		bad("target", "%s: not with --scheduled", why)
	}
	if c.Noisy.on() {
		bad("target", "%s: not with the noisy-neighbour run (--flood-messages)", why)
	}
	if c.Topic != "" {
		if err := rocketmq.CheckTopic(c.Topic); err != nil {
			bad("topic", "%v", err)
		}
	}
}

// keys are message seq's order key ("" without order keys) and forward
// key, given its message key (see ForwardKey).
func (c *Config) keys(seq int64, key string) (orderKey, forwardKey string) {
	orderKey = c.orderKey(seq)
	if orderKey != "" && c.ForwardKey == ForwardKeyOrder {
		return orderKey, orderKey
	}
	return orderKey, key
}

// orderKey is message seq's order key ("" without order keys).
func (c *Config) orderKey(seq int64) string {
	switch {
	case c.HotKey:
		return "hot"
	case c.OrderKeys > 0:
		return "ok-" + strconv.FormatInt(seq%int64(c.OrderKeys), 10)
	}
	return ""
}

// shortFirstDelay is the first check-back delay of a run that leaves
// messages for check-back, so that they are answered within the run.
const shortFirstDelay = 100 * time.Millisecond

// firstDelay is the embedded center's first check-back delay: FirstDelay
// when set; else shortFirstDelay in a run that leaves messages for
// check-back, and the center's default (30 s) in one that does not. A
// PREPARE is checked back once it has waited the first delay without
// its COMMIT, and in a burst its COMMIT may wait longer than 100 ms
// behind the backlog in the control topic: such a run would check back
// messages whose COMMIT is on its way and measure that work too.
func (c Config) firstDelay() time.Duration {
	switch {
	case c.FirstDelay > 0:
		return c.FirstDelay
	case c.CheckbackRatio > 0:
		return shortFirstDelay
	default:
		return verifier.DefaultFirstDelay
	}
}
