package containers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rmqadmin "github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/jackc/pgx/v5"
	"github.com/moby/moby/api/types/container"
	mobynet "github.com/moby/moby/api/types/network"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/kafka"
	"github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/forwarder/rocketmq"
)

// Images. Override with EVENTCENTER_TC_POSTGRES_IMAGE,
// EVENTCENTER_TC_KAFKA_IMAGE and EVENTCENTER_TC_ROCKETMQ_IMAGE.
var (
	postgresImage = imageFromEnv("EVENTCENTER_TC_POSTGRES_IMAGE", "postgres:16-alpine")
	kafkaImage    = imageFromEnv("EVENTCENTER_TC_KAFKA_IMAGE", "apache/kafka:3.9.1")
	rocketmqImage = imageFromEnv("EVENTCENTER_TC_ROCKETMQ_IMAGE", "apache/rocketmq:5.3.1")
)

func imageFromEnv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// The RocketMQ client's logger is process-global; keep it quiet.
func init() { rocketmq.SetClientLogger(slog.New(slog.DiscardHandler)) }

// startTimeout bounds starting one container, image pull included.
const startTimeout = 5 * time.Minute

var (
	dockerOnce sync.Once
	dockerErr  error
)

// requireDocker skips the test when no Docker engine answers. It never
// fails: CI machines (CI=true) have no Docker either.
func requireDocker(t *testing.T) {
	t.Helper()
	dockerOnce.Do(func() { dockerErr = pingDocker() })
	if dockerErr != nil {
		t.Skipf("skipping: no Docker engine is reachable (%v). These suites run PostgreSQL, Kafka and RocketMQ in containers "+
			"with testcontainers-go and need Docker (or a compatible engine, DOCKER_HOST); see docs/testcontainers.md", dockerErr)
	}
}

func pingDocker() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return fmt.Errorf("docker provider: %w", err)
	}
	// Health closes the provider.
	if err := p.Health(ctx); err != nil {
		return fmt.Errorf("docker ping: %w", err)
	}
	return nil
}

// lazy starts a shared resource once, for every test of the package.
type lazy[T any] struct {
	once sync.Once
	v    T
	err  error
}

func (l *lazy[T]) get(start func(context.Context) (T, error)) (T, error) {
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		l.v, l.err = start(ctx)
	})
	return l.v, l.err
}

var (
	termMu     sync.Mutex
	terminates []func(context.Context) error
)

// onTerminate registers a clean-up that runs after all tests.
func onTerminate(f func(context.Context) error) {
	termMu.Lock()
	defer termMu.Unlock()
	terminates = append(terminates, f)
}

// terminateShared removes the shared containers and networks, newest first.
func terminateShared() {
	termMu.Lock()
	defer termMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := len(terminates) - 1; i >= 0; i-- {
		if err := terminates[i](ctx); err != nil {
			fmt.Fprintln(os.Stderr, "containers: clean-up:", err)
		}
	}
	terminates = nil
}

func terminateContainer(c testcontainers.Container) func(context.Context) error {
	return func(context.Context) error { return testcontainers.TerminateContainer(c) }
}

// ---- PostgreSQL ----

var pgShared lazy[string]

func startPostgres(ctx context.Context) (string, error) {
	c, err := postgres.Run(ctx, postgresImage,
		postgres.WithDatabase("eventcenter"),
		postgres.WithUsername("postgres"),
		postgres.WithPassword("postgres"),
		postgres.BasicWaitStrategies(),
	)
	if c != nil {
		onTerminate(terminateContainer(c))
	}
	if err != nil {
		return "", fmt.Errorf("start postgres container (%s): %w", postgresImage, err)
	}
	dsn, err := c.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		return "", fmt.Errorf("postgres connection string: %w", err)
	}
	return dsn, nil
}

var dbSeq atomic.Int64

// postgresDSN returns a DSN for a new, empty database in the shared
// PostgreSQL container.
func postgresDSN(t *testing.T) string {
	t.Helper()
	base, err := pgShared.get(startPostgres)
	require.NoError(t, err)
	name := fmt.Sprintf("ec_test_%d", dbSeq.Add(1))
	conn, err := pgx.Connect(t.Context(), base)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), "CREATE DATABASE "+name)
	require.NoError(t, err, "create database %s", name)
	u, err := url.Parse(base)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}

// ---- Kafka ----

var kafkaShared lazy[[]string]

// apacheKafkaStart runs the apache/kafka image under the kafka module. The
// module writes a start script for Confluent's image that exports the
// advertised listeners (the host's mapped port); we take that one line and
// start the apache image's own entry point, which turns the module's
// KAFKA_* environment (KRaft, combined broker and controller) into
// server.properties.
const apacheKafkaStart = `while [ ! -f /usr/sbin/testcontainers_start.sh ]; do sleep 0.1; done; ` +
	`eval "$(grep '^export KAFKA_ADVERTISED_LISTENERS=' /usr/sbin/testcontainers_start.sh)"; ` +
	`exec /etc/kafka/docker/run`

func startKafka(ctx context.Context) ([]string, error) {
	opts := []testcontainers.ContainerCustomizer{kafka.WithClusterID("5L6g3nShT-eMCtK--X86sw")}
	if strings.HasPrefix(kafkaImage, "apache/kafka") {
		opts = append(opts, testcontainers.WithCmd("-c", apacheKafkaStart))
	}
	c, err := kafka.Run(ctx, kafkaImage, opts...)
	if c != nil {
		onTerminate(terminateContainer(c))
	}
	if err != nil {
		return nil, fmt.Errorf("start kafka container (%s): %w", kafkaImage, err)
	}
	brokers, err := c.Brokers(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka brokers: %w", err)
	}
	return brokers, nil
}

// ---- RocketMQ ----

// rocketMQ is a name server and a broker on one Docker network. The broker
// advertises brokerIP1 = the Docker host's IP and a listen port that is
// published on the same host port, so the route the name server hands out
// is reachable from the tests.
type rocketMQ struct {
	nameServer string // ip:port on the host
	brokerAddr string // ip:port on the host, as advertised
	admin      rmqAdmin
}

// rmqAdmin is the part of the client's admin API the tests use.
type rmqAdmin interface {
	CreateTopic(ctx context.Context, opts ...rmqadmin.OptionCreate) error
	FetchPublishMessageQueues(ctx context.Context, topic string) ([]*primitive.MessageQueue, error)
	Close() error
}

var rmqShared lazy[*rocketMQ]

const brokerConf = `brokerClusterName = DefaultCluster
brokerName = broker-a
brokerId = 0
brokerRole = ASYNC_MASTER
flushDiskType = ASYNC_FLUSH
deleteWhen = 04
fileReservedTime = 1
diskMaxUsedSpaceRatio = 98
autoCreateTopicEnable = false
autoCreateSubscriptionGroup = true
brokerIP1 = %s
listenPort = %d
`

func startRocketMQ(ctx context.Context) (*rocketMQ, error) {
	nw, err := network.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("create docker network: %w", err)
	}
	onTerminate(func(ctx context.Context) error { return nw.Remove(ctx) })
	jvm := map[string]string{"JAVA_OPT_EXT": "-Xms256m -Xmx256m -Xmn128m"}
	ns, err := testcontainers.Run(ctx, rocketmqImage,
		network.WithNetwork([]string{"namesrv"}, nw),
		testcontainers.WithExposedPorts("9876/tcp"),
		testcontainers.WithEnv(jvm),
		testcontainers.WithCmd("sh", "mqnamesrv"),
		testcontainers.WithWaitStrategy(wait.ForLog("The Name Server boot success").WithStartupTimeout(3*time.Minute)),
	)
	if ns != nil {
		onTerminate(terminateContainer(ns))
	}
	if err != nil {
		return nil, fmt.Errorf("start rocketmq name server (%s): %w", rocketmqImage, err)
	}
	host, err := ns.Host(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker host: %w", err)
	}
	ip, err := hostIP(ctx, host)
	if err != nil {
		return nil, err
	}
	nsPort, err := ns.MappedPort(ctx, "9876/tcp")
	if err != nil {
		return nil, fmt.Errorf("name server port: %w", err)
	}
	port, err := freeHostPort()
	if err != nil {
		return nil, err
	}
	exposed := fmt.Sprintf("%d/tcp", port)
	brokerJVM := map[string]string{"JAVA_OPT_EXT": "-Xms512m -Xmx512m -Xmn256m"}
	broker, err := testcontainers.Run(ctx, rocketmqImage,
		network.WithNetwork([]string{"broker"}, nw),
		testcontainers.WithExposedPorts(exposed),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			// The advertised port must be the published one.
			hc.PortBindings = mobynet.PortMap{mobynet.MustParsePort(exposed): {{HostPort: strconv.Itoa(port)}}}
		}),
		testcontainers.WithFiles(testcontainers.ContainerFile{
			Reader: strings.NewReader(fmt.Sprintf(brokerConf, ip, port)), ContainerFilePath: "/home/rocketmq/broker.conf", FileMode: 0o644,
		}),
		testcontainers.WithEnv(brokerJVM),
		testcontainers.WithCmd("sh", "mqbroker", "-n", "namesrv:9876", "-c", "/home/rocketmq/broker.conf"),
		testcontainers.WithWaitStrategy(wait.ForLog("boot success").WithStartupTimeout(3*time.Minute)),
	)
	if broker != nil {
		onTerminate(terminateContainer(broker))
	}
	if err != nil {
		return nil, fmt.Errorf("start rocketmq broker (%s): %w", rocketmqImage, err)
	}
	r := &rocketMQ{
		nameServer: net.JoinHostPort(ip, nsPort.Port()),
		brokerAddr: net.JoinHostPort(ip, strconv.Itoa(port)),
	}
	adm, err := rmqadmin.NewAdmin(rmqadmin.WithResolver(primitive.NewPassthroughResolver([]string{r.nameServer})))
	if err != nil {
		return nil, fmt.Errorf("rocketmq admin client: %w", err)
	}
	onTerminate(func(context.Context) error { return adm.Close() })
	r.admin = adm
	return r, nil
}

// hostIP returns an IPv4 literal for the Docker host (the RocketMQ client
// does not resolve names).
func hostIP(ctx context.Context, host string) (string, error) {
	if ip := net.ParseIP(host); ip != nil {
		return ip.String(), nil
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return "", fmt.Errorf("resolve docker host %q: %w", host, err)
	}
	for _, a := range addrs {
		if v4 := a.IP.To4(); v4 != nil {
			return v4.String(), nil
		}
	}
	return "", fmt.Errorf("docker host %q has no IPv4 address", host)
}

// freeHostPort picks a port that is free on this machine now.
func freeHostPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// createTopic creates a RocketMQ topic with 4 queues on the broker and
// waits until the name server hands out its route.
func (r *rocketMQ) createTopic(t *testing.T, topic string) {
	t.Helper()
	require.NoError(t, r.admin.CreateTopic(t.Context(),
		rmqadmin.WithTopicCreate(topic), rmqadmin.WithBrokerAddrCreate(r.brokerAddr),
		rmqadmin.WithReadQueueNums(4), rmqadmin.WithWriteQueueNums(4)), "create topic %s", topic)
	// The broker registers the new topic with the name server; wait until
	// the name server hands out its route.
	var last error
	ok := eventually(time.Minute, func() bool {
		var qs []*primitive.MessageQueue
		qs, last = r.admin.FetchPublishMessageQueues(t.Context(), topic)
		return last == nil && len(qs) > 0
	})
	require.True(t, ok, "the name server has no route for %s: %v", topic, last)
}

// ---- one test's world ----

// world is one test's configuration: topics and group named after the
// test on the shared Kafka, a store, and centers started on them.
type world struct {
	t       *testing.T
	brokers []string
	control string
	topic   string // Kafka business topic
	cfg     config.Config
}

var nonAlnum = regexp.MustCompile(`[^a-z0-9]+`)

// newWorld needs Docker; driver is "postgres" (a database in the shared
// container) or "sqlite".
func newWorld(t *testing.T, driver string, edit ...func(*config.Config)) *world {
	t.Helper()
	requireDocker(t)
	brokers, err := kafkaShared.get(startKafka)
	require.NoError(t, err)
	prefix := "ec-" + strings.Trim(nonAlnum.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	w := &world{t: t, brokers: brokers, control: prefix + ".control", topic: prefix + ".events"}
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	require.NoError(t, err)
	defer adm.Close()
	resp, err := kadm.NewClient(adm).CreateTopics(t.Context(), 4, 1, nil, w.control, w.control+".dlq", w.topic)
	require.NoError(t, err)
	for _, r := range resp.Sorted() {
		require.NoError(t, r.Err, "create topic %s", r.Topic)
	}

	cfg := config.Default()
	cfg.Kafka.Brokers = brokers
	cfg.Kafka.ControlTopic = w.control
	cfg.Kafka.Group = prefix
	cfg.Kafka.SessionTimeout = 10 * time.Second
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.Admin.Insecure = true
	cfg.Forward.ScanInterval = 200 * time.Millisecond
	cfg.Forward.Lease = 5 * time.Second
	cfg.Forward.SendTimeout = 4 * time.Second
	cfg.Forward.BackoffBase = 100 * time.Millisecond
	cfg.Forward.BackoffCap = time.Second
	cfg.Ingest.SendLease = 5 * time.Second
	cfg.Forward.Targets = []config.Target{{Name: "kafka", Type: "kafka"}}
	cfg.Log.Level = "warn"
	switch driver {
	case "postgres":
		cfg.Store = config.Store{Driver: "postgres", DSN: postgresDSN(t), MaxConns: 8, AutoMigrate: true}
	case "sqlite":
		cfg.Store = config.Store{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "ec.db"), MaxConns: 1, AutoMigrate: true}
	default:
		t.Fatalf("unknown driver %q", driver)
	}
	for _, f := range edit {
		f(&cfg)
	}
	w.cfg = cfg
	return w
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startCenter starts a center; it is stopped at clean-up.
func (w *world) startCenter() *center.Center {
	w.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(w.t, err)
	c, err := center.New(w.t.Context(), w.cfg, center.Options{
		Logger:   testLogger(w.t),
		Listener: l,
		KafkaOptions: []kgo.Opt{
			kgo.FetchMaxWait(100 * time.Millisecond),
			kgo.HeartbeatInterval(500 * time.Millisecond),
		},
	})
	require.NoError(w.t, err)
	require.NoError(w.t, c.Start(w.t.Context()))
	w.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(w.t, c.Stop(ctx))
	})
	return c
}

// eventually polls cond every 50 ms until it holds or timeout passes.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond) // polling progress on real servers, not an event we could signal
	}
}

var errLocalTx = errors.New("local transaction failed")
