package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/store/mysql/mytest"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

const (
	controlTopic  = "ec.control"
	businessTopic = "orders.events"
	partitions    = 4
)

// env is one test's world: a broker, a database, and centers started on it.
type env struct {
	t       *testing.T
	cluster *kfake.Cluster
	brokers []string
	cfg     config.Config

	rawOnce sync.Once
	rawCl   *kgo.Client
}

// raw returns a shared client for raw control records.
func (e *env) raw() *kgo.Client {
	e.rawOnce.Do(func() { e.rawCl = e.rawClient() })
	return e.rawCl
}

// newEnv starts kfake with the control, dead-letter and business topics and
// prepares a center configuration on the given store driver.
func newEnv(t *testing.T, driver string, edit ...func(*config.Config)) *env {
	t.Helper()
	cluster, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.SeedTopics(partitions, controlTopic, controlTopic+".dlq", businessTopic),
		kfake.AllowAutoTopicCreation(),
	)
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	e := &env{t: t, cluster: cluster, brokers: cluster.ListenAddrs()}
	cfg := config.Default()
	cfg.Kafka.Brokers = e.brokers
	cfg.Kafka.ControlTopic = controlTopic
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.Admin.Insecure = true
	cfg.Forward.ScanInterval = 100 * time.Millisecond
	// Leases short enough that a killed center's messages come back within
	// a test, long enough that a loaded CI machine (race detector, other
	// packages' tests) does not time sends out; and no DEAD from slowness:
	// tests that want DEAD set their own attempt limit.
	cfg.Forward.Lease = 8 * time.Second
	cfg.Forward.SendTimeout = 5 * time.Second
	cfg.Forward.BackoffBase = 50 * time.Millisecond
	cfg.Forward.BackoffCap = time.Second
	cfg.Forward.MaxAttempts = 1000
	cfg.Ingest.SendLease = 8 * time.Second
	cfg.Forward.Targets = []config.Target{{Name: "kafka", Type: "kafka", AutoCreateTopics: true}}
	cfg.Log.Level = "warn"
	switch driver {
	case "sqlite":
		cfg.Store = config.Store{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "ec.db"), MaxConns: 1, AutoMigrate: true}
	case "postgres":
		cfg.Store = config.Store{Driver: "postgres", DSN: pgtest.DSN(t), MaxConns: 8, AutoMigrate: true}
	case "mysql":
		cfg.Store = config.Store{Driver: "mysql", DSN: mytest.DSN(t), MaxConns: 8, AutoMigrate: true}
	default:
		t.Fatalf("unknown driver %q", driver)
	}
	for _, f := range edit {
		f(&cfg)
	}
	e.cfg = cfg
	return e
}

// fastGroup makes consumer-group changes quick in tests.
func fastGroup() []kgo.Opt {
	return []kgo.Opt{
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RebalanceTimeout(6 * time.Second),
	}
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startCenter starts a center on the env; it is stopped at cleanup unless
// the test stops it first.
func (e *env) startCenter(opt center.Options) *center.Center {
	e.t.Helper()
	if opt.Logger == nil {
		opt.Logger = testLogger(e.t)
	}
	opt.KafkaOptions = append(fastGroup(), opt.KafkaOptions...)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(e.t, err)
	opt.Listener = l
	c, err := center.New(e.t.Context(), e.cfg, opt)
	require.NoError(e.t, err)
	require.NoError(e.t, c.Start(e.t.Context()))
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(e.t, c.Stop(ctx))
		})
	}
	e.t.Cleanup(stop)
	return c
}

// rawClient produces raw control records (commit before prepare, garbage).
func (e *env) rawClient() *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.DefaultProduceTopic(controlTopic))
	require.NoError(e.t, err)
	e.t.Cleanup(cl.Close)
	return cl
}

// produceEnvelope writes one native envelope synchronously.
func produceEnvelope(t *testing.T, cl *kgo.Client, env envelope.Envelope) {
	t.Helper()
	rec, err := envelope.Encode(env)
	require.NoError(t, err)
	kr := &kgo.Record{Topic: controlTopic, Key: rec.Key, Value: rec.Value}
	for _, h := range rec.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	require.NoError(t, cl.ProduceSync(t.Context(), kr).FirstErr())
}

// forwarded is one record read from a business topic.
type forwarded struct {
	ID      string
	Key     string
	Value   string
	Headers map[string]string
	// At is the record's timestamp (the center's producer sets it when it
	// sends the record).
	At time.Time
}

// collector reads business topics from the start and remembers every record
// by its ec-id.
type collector struct {
	mu   sync.Mutex
	byID map[string][]forwarded
	all  int
	cl   *kgo.Client
	done chan struct{}
}

func (e *env) collect(topics ...string) *collector {
	e.t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(e.brokers...),
		kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(50*time.Millisecond),
	)
	require.NoError(e.t, err)
	c := &collector{byID: map[string][]forwarded{}, cl: cl, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(c.done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				f := forwarded{Key: string(r.Key), Value: string(r.Value), Headers: map[string]string{}, At: r.Timestamp}
				for _, h := range r.Headers {
					f.Headers[h.Key] = string(h.Value)
				}
				f.ID = f.Headers["ec-id"]
				c.mu.Lock()
				c.byID[f.ID] = append(c.byID[f.ID], f)
				c.all++
				c.mu.Unlock()
			})
		}
	}()
	e.t.Cleanup(func() {
		cancel()
		<-c.done
		cl.Close()
	})
	return c
}

// get returns the records forwarded with an ec-id.
func (c *collector) get(id string) []forwarded {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]forwarded(nil), c.byID[id]...)
}

// count returns the number of distinct ids and of records.
func (c *collector) count() (ids, records int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID), c.all
}

// waitFor waits until every id was forwarded at least once.
func (c *collector) waitFor(t *testing.T, ids []string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		missing := 0
		var example string
		c.mu.Lock()
		for _, id := range ids {
			if len(c.byID[id]) == 0 {
				missing++
				example = id
			}
		}
		c.mu.Unlock()
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages not forwarded after %s (e.g. %s)", missing, len(ids), timeout, example)
		}
		time.Sleep(20 * time.Millisecond) // polling a consumer's progress, not waiting for an event we could signal
	}
}

func msgID(biz, key string) string { return fmt.Sprintf("%s:%s", biz, key) }
