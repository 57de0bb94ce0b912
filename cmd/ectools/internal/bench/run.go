package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/store/sharded"
	"github.com/eventcenter/eventcenter/testsupport/rocketmqfake"
	"github.com/eventcenter/eventcenter/tracing"
)

// bizID is the bizID of every bench message.
const bizID = "bench"

// profilePart is the label that splits a CPU profile of a run into the
// broker (kfake), the center and the load (producers, business-topic
// consumer, the check-back server); "go tool pprof -tags" prints the
// shares.
const profilePart = "part"

// seqHeader carries the message's sequence number to the forwarded record.
const seqHeader = "bench-seq"

// Run performs one bench run and returns its report. It cleans up what it
// created (kfake, schemas, temporary files, topics of baselines) before
// returning.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HeapEvery == 0 {
		cfg.HeapEvery = 10 * time.Second
	}
	runID := randomID()
	rep = &Report{RunID: runID, Machine: machine(), Config: reportConfig(cfg)}
	tmp, err := os.MkdirTemp("", "ecbench-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	cfg.tempDir = tmp
	if cfg.Store == "postgres" {
		rep.Machine.Postgres = pgVersion(ctx, cfg.DSN)
	}
	if cfg.Store == "mysql" {
		rep.Machine.MySQL = myVersion(ctx, cfg.DSN)
	}

	// The broker.
	brokers := cfg.Brokers
	var cluster *kfake.Cluster
	if len(brokers) == 0 {
		// Goroutines inherit the labels of the one that starts them, so
		// a CPU profile (--cpuprofile) splits into broker, center and load.
		pprof.Do(ctx, pprof.Labels(profilePart, "broker"), func(context.Context) {
			cluster, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
		})
		if err != nil {
			return nil, fmt.Errorf("start kfake: %w", err)
		}
		defer cluster.Close()
		brokers = cluster.ListenAddrs()
	}
	topic := cfg.Topic
	if topic == "" {
		topic = "bench." + runID
		if cfg.Target == TargetRocketMQ {
			topic = "bench_" + runID // RocketMQ topic names have no dots
		}
	}
	rep.Config.Topic = topic
	var topics []string
	if cfg.Target == TargetKafka {
		topics = append(topics, topic)
	} else {
		if cfg.rmq == nil {
			pprof.Do(ctx, pprof.Labels(profilePart, "broker"), func(context.Context) {
				cfg.rmq, err = rocketmqfake.Start()
			})
			if err != nil {
				return nil, fmt.Errorf("start the RocketMQ stand-in: %w", err)
			}
			defer cfg.rmq.Close()
		}
		if err := cfg.rmq.CreateTopic(topic, cfg.Partitions); err != nil {
			return nil, err
		}
	}
	if cfg.Via == ViaHTTP {
		topics = append(topics, topic+".http")
	}
	if !cfg.External {
		topics = append(topics, cfg.ControlTopic, cfg.ControlTopic+".dlq")
		if cfg.Noisy.on() && cfg.Noisy.QuietLane {
			lane := quietLaneTopic(cfg.ControlTopic)
			topics = append(topics, lane, lane+".dlq")
		}
	}
	schedTopic := topic + ".sched"
	if cfg.Scheduled > 0 {
		topics = append(topics, schedTopic)
	}
	if err := createTopics(ctx, brokers, cfg.Partitions, cfg.BrokerRetention, topics...); err != nil {
		return nil, err
	}

	// Baselines first, on the same broker and database, before the center
	// exists (it would compete for the CPU).
	if cfg.Baselines {
		n := cfg.Messages
		if n == 0 {
			n = 100000
		}
		n = min(n, 200000)
		fmt.Fprintf(progress(cfg), "baseline: transport, %d records\n", n)
		if rep.Transport, err = transportBaseline(ctx, brokers, "bench.transport."+runID, cfg.Partitions, n, cfg.Payload); err != nil {
			return nil, err
		}
		if cfg.Rate > 0 && !cfg.External && cfg.Via != ViaHTTP {
			d := cfg.Duration
			if d == 0 {
				d = time.Duration(float64(cfg.Messages) / cfg.Rate * float64(time.Second))
			}
			d = min(max(d, time.Second), 10*time.Second)
			fmt.Fprintf(progress(cfg), "baseline: transport at %.0f msg/s for %s (clientlib producers → control topic → consumer, no center)\n", cfg.Rate, d)
			pprof.Do(ctx, pprof.Labels(profilePart, "load"), func(ctx context.Context) {
				rep.RateBaseline, err = rateBaseline(ctx, cfg, brokers, "bench.atrate."+runID, d)
			})
			if err != nil {
				return nil, err
			}
			runtime.GC()
		}
		if !cfg.External || cfg.DSN != "" {
			writers := cfg.StoreWriters
			if writers == 0 {
				writers = map[string]int{"postgres": 2, "mysql": 2, "sqlite": 1, "sharded": 2}[cfg.Store]
			}
			fmt.Fprintf(progress(cfg), "baseline: store (%s), %d messages, %d writers\n", cfg.Store, n, writers)
			if rep.Store, err = storeBaseline(ctx, cfg, runID, n, writers); err != nil {
				return nil, err
			}
		}
		runtime.GC()
	}

	// The check-back server: answers commit at once.
	var cb *checkbackServer
	pprof.Do(ctx, pprof.Labels(profilePart, "load"), func(context.Context) {
		cb, err = startCheckback(cfg)
	})
	if err != nil {
		return nil, err
	}
	defer cb.stop()
	if cfg.Baselines && cfg.CheckbackRatio > 0 && !cfg.External {
		n := int(float64(max(cfg.Messages, 20000)) * cfg.CheckbackRatio)
		n = min(max(n, 5000), 100000)
		fmt.Fprintf(progress(cfg), "baseline: check-back, %d plain HTTP calls, %d at a time\n", n, cfg.CheckbackConcurrency)
		rep.CheckbackBaseline, err = profiledCheckbackBaseline(ctx, cfg, cb.url, n)
		if err != nil {
			return nil, err
		}
		cb.calls.Store(0)
		cb.first.Store(0)
		runtime.GC()
	}

	// The center.
	var ctr *center.Center
	var sched *seededBacklog
	if !cfg.External {
		var (
			c          *center.Center
			stopCenter func() error
		)
		var rv *RowVersions
		var centerDSN string
		if cfg.Store == "postgres" {
			cfg.rowVersions = &rv
			cfg.centerDSN = &centerDSN
		}
		pprof.Do(ctx, pprof.Labels(profilePart, "center"), func(ctx context.Context) {
			c, stopCenter, err = startCenter(ctx, cfg, runID, brokers, cb.allow)
		})
		if err != nil {
			return nil, err
		}
		ctr = c
		defer func() {
			if serr := stopCenter(); serr != nil && err == nil {
				err = serr
			}
			if rv != nil && rep != nil {
				n := rep.Center.Sent
				if rep.Via != nil {
					n += rep.Via.HTTP.Sent
				}
				if rep.Scheduled != nil {
					n += int64(rep.Scheduled.Messages)
				}
				rv.perMessage(n)
				rep.RowVersions = rv
			}
		}()
		if cfg.Scheduled > 0 {
			if sched, err = seedBacklog(ctx, cfg, c, runID, schedTopic, cb.url, centerDSN); err != nil {
				return nil, err
			}
			rep.Scheduled = &sched.res
		}
	}
	if cluster != nil {
		// kfake keeps records in memory; drop the expired ones now and then.
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(10 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					cluster.ApplyRetention()
				}
			}
		}()
		defer func() { close(stop); <-done }()
	}

	var meter cpuMeter
	if cfg.Store == "postgres" && !cfg.External {
		meter = cpuMeter{dsn: cfg.DSN, app: appName(runID)}
	}
	var tracker *schedTracker
	if sched != nil {
		var from time.Time
		if cfg.ScheduledDueRate > 0 {
			from = sched.plan.base
		}
		if tracker, err = startSchedTracker(ctx, brokers, schedTopic, cfg.Scheduled, from); err != nil {
			return nil, err
		}
		defer tracker.stop()
	}
	rep.Machine.LoadAvgStart = loadAvg()
	// The CPU profile that splits the process's CPU into parts runs in
	// every run, over the same window as the /proc counters.
	var parts partProfiler
	if perr := parts.start(cfg.CPUProfile); perr != nil {
		if cfg.CPUProfile != nil {
			return nil, perr
		}
		cfg.Logger.Warn("CPU by part not measured", "err", perr)
	}
	defer parts.abort()
	cpu0, began := meter.sample(ctx), time.Now()
	kafkaPass := pass{via: ViaKafka, keyPrefix: runID, fromPrepare: cfg.Via == ViaHTTP}
	if sched != nil && sched.plan.step > 0 && cfg.ScheduledDueRate > 0 {
		rep.Scheduled.FirstDueSeconds = sched.plan.base.Sub(began).Seconds()
	}
	pprof.Do(ctx, pprof.Labels(profilePart, "load"), func(ctx context.Context) {
		if cfg.Noisy.on() {
			rep.Noisy, err = noisyRun(ctx, cfg, runID, brokers, topic, cb)
			if rep.Noisy != nil {
				rep.Center = rep.Noisy.FloodWithQuiet.Flood
			}
			return
		}
		if cfg.Messages > 0 || cfg.Duration > 0 {
			rep.Center, err = load(ctx, cfg, kafkaPass, brokers, topic, cb)
		}
	})
	if err == nil && tracker != nil {
		due := cfg.ScheduledDueRate > 0
		if due {
			fmt.Fprintf(progress(cfg), "waiting for the scheduled messages: %d of %d read, the last due at %s\n",
				tracker.count(), cfg.Scheduled, sched.plan.last().Format(time.TimeOnly))
			err = tracker.wait(ctx, cfg, sched.plan.last().Add(cfg.DrainTimeout))
		}
		tracker.result(rep.Scheduled, due)
	}
	if err == nil && cfg.Via == ViaHTTP {
		// The same load again, through the producer API, on the same center.
		fmt.Fprintf(progress(cfg), "the same load through the producer HTTP API (%s)\n", ctr.IngressAddr())
		httpPass := pass{via: ViaHTTP, keyPrefix: runID + "-http", fromPrepare: true, ingressAddr: ctr.IngressAddr()}
		var viaHTTP CenterResult
		pprof.Do(ctx, pprof.Labels(profilePart, "load"), func(ctx context.Context) {
			viaHTTP, err = load(ctx, cfg, httpPass, brokers, topic+".http", cb)
		})
		rep.Via = newViaReport(rep.Center, viaHTTP)
	}
	forwarded := rep.Center.Forwarded
	if rep.Scheduled != nil {
		forwarded += rep.Scheduled.Forwarded
	}
	rep.CPU = usage(cpu0, meter.sample(ctx), time.Since(began).Seconds(), forwarded)
	if cp, perr := parts.stop(rep.CPU.ProcessSeconds, forwarded, int64(rep.Center.Checkback.Count)); perr != nil {
		cfg.Logger.Warn("CPU by part not measured", "err", perr)
	} else {
		rep.CPU.Parts = cp
	}
	rep.Machine.LoadAvgEnd = loadAvg()
	if err != nil {
		return nil, err
	}
	if ctr != nil {
		rep.Metrics = snapshot(ctr.Registry())
	}
	rep.finish()
	return rep, nil
}

func progress(cfg Config) io.Writer {
	if cfg.Progress == nil {
		return io.Discard
	}
	return cfg.Progress
}

// checkbackServer answers check-backs as the load decided (see
// Config.checkbackDecision).
type checkbackServer struct {
	srv    *http.Server
	done   chan struct{}
	origin string
	url    string
	// allow is the center's check-back allow list for this server.
	allow []string
	// zk holds the provider's registration with --checkback-zookeeper.
	zk    *zk.Conn
	calls atomic.Int64
	// first is when the first check-back call came (Unix ns; 0: none).
	first atomic.Int64
}

func startCheckback(cfg Config) (*checkbackServer, error) {
	l, err := net.Listen("tcp", cfg.CheckbackListen)
	if err != nil {
		return nil, fmt.Errorf("check-back server: listen on %s: %w", cfg.CheckbackListen, err)
	}
	s := &checkbackServer{done: make(chan struct{})}
	h := clientlib.NewCheckbackHandler(func(_ context.Context, _, key string) (clientlib.Decision, error) {
		s.calls.Add(1)
		s.first.CompareAndSwap(0, time.Now().UnixNano())
		return cfg.checkbackDecision(key), nil
	}, clientlib.WithCheckbackLogger(cfg.Logger))
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.origin = "http://" + l.Addr().String()
	s.url = cfg.CheckbackURL
	if s.url == "" {
		s.url = s.origin + "/check"
	}
	s.allow = []string{s.origin, "tri://" + l.Addr().String(), "jsonrpc://" + l.Addr().String()}
	if zkAddr := cfg.CheckbackZooKeeper; zkAddr != "" {
		if err := s.register(zkAddr, l.Addr().String()); err != nil {
			_ = l.Close()
			return nil, err
		}
		s.url = "zookeeper://" + zkAddr + "/" + benchInterface + "?protocol=tri"
		s.allow = append(s.allow, "zookeeper://"+zkAddr)
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(l)
	}()
	return s, nil
}

// checkbackDecision is what the load's producer answers for a message
// key (<prefix>-<seq>): rollback for the messages it rolls back, commit for
// every other one. On a loaded machine a rolled-back message's ROLLBACK can
// reach the center after its first check-back; answering commit then made
// the center send a message whose producer rolled back (the first decision
// stands), which the run counted as a duplicate.
func (cfg Config) checkbackDecision(key string) clientlib.Decision {
	i := strings.LastIndexByte(key, '-')
	if i < 0 {
		return clientlib.DecisionCommit
	}
	seq, err := strconv.ParseInt(key[i+1:], 10, 64)
	if err != nil || kindOf(seq, cfg.RollbackRatio, cfg.CheckbackRatio) != kindRollback {
		return clientlib.DecisionCommit
	}
	return clientlib.DecisionRollback
}

func (s *checkbackServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
	if s.zk != nil {
		s.zk.Close()
	}
}

// benchInterface is the Dubbo interface the check-back server registers
// as with --checkback-zookeeper.
const benchInterface = "ecbench.Checker"

// register registers the check-back server in ZooKeeper as Dubbo does: an
// ephemeral node under /dubbo/<interface>/providers named by the
// URL-encoded provider URL, held by a session of its own.
func (s *checkbackServer) register(zkAddr, addr string) error {
	conn, _, err := zk.Connect([]string{zkAddr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		return fmt.Errorf("check-back server: connect to ZooKeeper %s: %w", zkAddr, err)
	}
	dir := "/dubbo/" + benchInterface + "/providers"
	cur := ""
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			conn.Close()
			return fmt.Errorf("check-back server: create %s in ZooKeeper %s: %w", cur, zkAddr, err)
		}
	}
	provider := "tri://" + addr + "/" + benchInterface + "?interface=" + benchInterface + "&methods=verifyMessage&side=provider"
	if _, err := conn.Create(dir+"/"+url.QueryEscape(provider), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		conn.Close()
		return fmt.Errorf("check-back server: register in ZooKeeper %s: %w", zkAddr, err)
	}
	s.zk = conn
	return nil
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// componentLabel is the pprof label that names the component of the
// embedded center a goroutine belongs to (center.Options.StartComponent):
// CPUParts.CenterComponents splits the center's CPU by it.
const componentLabel = "component"

// startLabelled starts a component of the embedded center under its
// componentLabel, which the goroutines it starts inherit.
func startLabelled(ctx context.Context, component string, start func(context.Context) error) error {
	var err error
	pprof.Do(ctx, pprof.Labels(componentLabel, component), func(ctx context.Context) { err = start(ctx) })
	return err
}

// startCenter starts a center in this process and returns its stop.
func startCenter(ctx context.Context, bc Config, runID string, brokers []string, cbAllow []string) (*center.Center, func() error, error) {
	cfg := config.Default()
	cfg.Kafka.Brokers = brokers
	cfg.Kafka.ControlTopic = bc.ControlTopic
	cfg.Kafka.Group = "ecbench-" + runID
	cfg.Kafka.ClientID = "ecbench-center"
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.Admin.Insecure = true
	cfg.Forward.Targets = []config.Target{{Name: "kafka", Type: "kafka", AutoCreateTopics: true}}
	if bc.Target == TargetRocketMQ {
		cfg.Forward.Targets = []config.Target{{Name: "rocketmq", Type: "rocketmq", NameServers: []string{bc.rmq.NameServerAddr()}, Group: "ecbench"}}
		cfg.Forward.DefaultTarget = "rocketmq"
	}
	cfg.Checkback.FirstDelay = bc.firstDelay()
	cfg.Checkback.BackoffBase = time.Second
	cfg.Checkback.EndpointConcurrency = bc.CheckbackConcurrency
	cfg.Checkback.Workers = bc.CheckbackWorkers
	cfg.Checkback.Allow = cbAllow
	if bc.ScanInterval > 0 {
		cfg.Forward.ScanInterval = bc.ScanInterval
	}
	if bc.Via == ViaHTTP {
		// The producer API, without a rate limit that would pace the load.
		cfg.Ingress.Listen, cfg.Ingress.Insecure = "127.0.0.1:0", true
		cfg.Ingress.Rate, cfg.Ingress.Burst = 1e9, 1<<30
	}
	cfg.Log.Level = "warn"
	bc.Noisy.center(&cfg)
	var dropSchema func()
	switch bc.Store {
	case "sqlite":
		dsn := bc.DSN
		if dsn == "" {
			dsn = bc.tempDir + "/center.db"
		}
		cfg.Store = config.Store{Driver: "sqlite", DSN: dsn, MaxConns: 1, AutoMigrate: true}
	case "postgres":
		dsn, drop, err := freshSchema(ctx, bc.DSN, "ecbench_"+runID)
		if err != nil {
			return nil, nil, fmt.Errorf("center store: %w", err)
		}
		if dsn, err = withAppName(dsn, appName(runID)); err != nil {
			drop()
			return nil, nil, fmt.Errorf("center store: %w", err)
		}
		if bc.centerDSN != nil {
			*bc.centerDSN = dsn
		}
		dropSchema = func() {
			if bc.rowVersions != nil {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				rv, err := readRowVersions(rctx, bc.DSN, "ecbench_"+runID, appName(runID))
				cancel()
				if err != nil {
					bc.Logger.Warn("row versions not measured", "err", err)
				} else {
					*bc.rowVersions = rv
				}
			}
			drop()
		}
		cfg.Store = config.Store{Driver: "postgres", DSN: dsn, MaxConns: bc.StoreMaxConns, AutoMigrate: true}
	case "sharded":
		var drops []func()
		dropSchema = func() {
			for _, d := range drops {
				d()
			}
		}
		cfg.Store = config.Store{Driver: "sharded", MaxConns: bc.StoreMaxConns, AutoMigrate: true}
		dsns := strings.Split(bc.DSN, ",")
		for i, b := range sharded.Even(len(dsns)) {
			dsn, drop, err := freshSchema(ctx, dsns[i], "ecbench_"+runID)
			if err != nil {
				dropSchema()
				return nil, nil, fmt.Errorf("center store: shard %d: %w", i, err)
			}
			drops = append(drops, drop)
			if dsn, err = withAppName(dsn, appName(runID)); err != nil {
				dropSchema()
				return nil, nil, fmt.Errorf("center store: shard %d: %w", i, err)
			}
			cfg.Store.Shards = append(cfg.Store.Shards, config.StoreShard{DSN: dsn, Buckets: b})
		}
	case "mysql":
		dsn, drop, err := freshDatabase(ctx, bc.DSN, "bench_"+runID)
		if err != nil {
			return nil, nil, fmt.Errorf("center store: %w", err)
		}
		dropSchema = drop
		cfg.Store = config.Store{Driver: "mysql", DSN: dsn, MaxConns: bc.StoreMaxConns, AutoMigrate: true}
	}
	fail := func(err error) (*center.Center, func() error, error) {
		if dropSchema != nil {
			dropSchema()
		}
		return nil, nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(fmt.Errorf("center http listener: %w", err))
	}
	opts := center.Options{Logger: bc.Logger, Listener: l, StartComponent: startLabelled}
	var tp tracing.Provider
	if bc.Tracing {
		tp = tracing.DiscardProvider()
		opts.TracerProvider = tp
	}
	c, err := center.New(ctx, cfg, opts)
	if err != nil {
		_ = l.Close()
		if tp != nil {
			_ = tp.Shutdown(ctx)
		}
		return fail(fmt.Errorf("center: %w", err))
	}
	if err := c.Start(ctx); err != nil {
		return fail(fmt.Errorf("center: %w", err))
	}
	stop := func() error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err := c.Stop(sctx)
		if tp != nil {
			_ = tp.Shutdown(sctx) // the discard exporter cannot fail
		}
		if dropSchema != nil {
			dropSchema()
		}
		if err != nil {
			return fmt.Errorf("stop center: %w", err)
		}
		return nil
	}
	// Ready when the consumer group gave it every control partition.
	deadline := time.Now().Add(time.Minute)
	for len(c.Owned.Partitions()) < bc.Partitions {
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = stop()
			return nil, nil, fmt.Errorf("center: owns %d of %d control partitions after a minute", len(c.Owned.Partitions()), bc.Partitions)
		}
		time.Sleep(20 * time.Millisecond) // polling the group's assignment
	}
	// With order keys, ready when per-key order is on, and on PostgreSQL
	// when ordered messages are written ahead (the cluster level gate's
	// first report), so that no run measures the start without them.
	// (The other stores decide per-key order when the center is made.)
	for bc.Store == "postgres" && (bc.OrderKeys > 0 || bc.HotKey) && !(c.Ordering() && c.WritingAhead()) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = stop()
			return nil, nil, fmt.Errorf("center: per-key order (ordering %v, written ahead %v) not on after a minute", c.Ordering(), c.WritingAhead())
		}
		time.Sleep(20 * time.Millisecond) // polling the level gate
	}
	return c, stop, nil
}

// CenterResult is what the center's run measured.
type CenterResult struct {
	Sent             int64  `json:"sent"`
	Committed        int64  `json:"committed"`
	RolledBack       int64  `json:"rolled_back"`
	LeftForCheckback int64  `json:"left_for_checkback"`
	Errors           int64  `json:"errors"`
	FirstError       string `json:"first_error,omitempty"`

	Forwarded  int64 `json:"forwarded"`
	Duplicates int64 `json:"duplicates"`
	Missing    int64 `json:"missing"`

	SendSeconds    float64 `json:"send_seconds"`
	SendRate       float64 `json:"send_rate"`
	ForwardSeconds float64 `json:"forward_seconds"`
	ForwardRate    float64 `json:"forward_rate"`

	CommitToForward Latency `json:"commit_to_forward"`
	// CommitToSend is commit → the center's produce to the business topic
	// (the forwarded record's timestamp): the center's share of
	// CommitToForward.
	CommitToSend Latency `json:"commit_to_send"`
	// CommitToAck is commit → the COMMIT envelope acknowledged by the
	// broker (the producer's share; what follows is the center's fetch
	// and apply up to its produce, then the broker and the consumer).
	CommitToAck Latency `json:"commit_to_ack"`
	// SchedLatency is how long this process's goroutines waited for a
	// CPU while the load ran (every goroutine of the process: center,
	// broker and loads).
	SchedLatency *SchedLatency `json:"sched_latency,omitempty"`
	// BeforeSplit and AfterSplit split CommitToForward by the messages'
	// commit time at a moment set by another load (the noisy-neighbour
	// run: committed while the flood was sending, and after, while its
	// backlog drained).
	BeforeSplit *Latency `json:"commit_to_forward_before_split,omitempty"`
	AfterSplit  *Latency `json:"commit_to_forward_after_split,omitempty"`
	// Checkback is prepare → forwarded of the messages left for check-back.
	Checkback      Latency `json:"checkback_resolution"`
	CheckbackRate  float64 `json:"checkback_rate"`
	CheckbackCalls int64   `json:"checkback_calls"`
	// CheckbackCallRate is resolved / (last resolved - first check-back
	// call): the rate at which the center works off prepares already
	// stale. With --checkback-first-delay longer than the sending, that
	// excludes the producers' time; otherwise it overlaps it.
	CheckbackCallRate float64 `json:"checkback_rate_from_first_call"`
	// FirstCheckbackSeconds is when the first check-back call came, from
	// the first send.
	FirstCheckbackSeconds float64 `json:"first_checkback_seconds"`

	// SlowestSecond is the whole second with the fewest forwarded
	// messages while a backlog existed (nil when there was none).
	SlowestSecond *SlowestSecond `json:"slowest_second_with_backlog,omitempty"`
	// SentPerSecond and ForwardedPerSecond count, per second from the
	// first send, the messages whose clock started (commit, or prepare for
	// check-back ones) and the messages forwarded.
	SentPerSecond      []int64 `json:"sent_per_second"`
	ForwardedPerSecond []int64 `json:"forwarded_per_second"`
	// LatencyPerSecond is the commit-to-forward latency of the messages
	// forwarded in each second (check-back ones excepted).
	LatencyPerSecond []SecondLatency `json:"commit_to_forward_per_second,omitempty"`

	HeapStartMB float64      `json:"heap_start_mb"`
	HeapEndMB   float64      `json:"heap_end_mb"`
	HeapMaxMB   float64      `json:"heap_max_mb"`
	HeapSamples []HeapSample `json:"heap_samples"`
}

// HeapSample is the heap in use after a GC at a moment of the run.
type HeapSample struct {
	Seconds float64 `json:"s"`
	MB      float64 `json:"mb"`
}

func heapMB(gc bool) float64 {
	if gc {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}

// load runs the producers and the consumer until every expected message
// was forwarded or the drain timeout passed.
// pass is how one load is sent: via Kafka producers or the producer HTTP
// API (at ingressAddr), keys prefixed keyPrefix; fromPrepare starts the
// latency clock before the PREPARE rather than in the local transaction.
type pass struct {
	via         string
	ingressAddr string
	keyPrefix   string
	fromPrepare bool
	// bizID of the messages ("" : the bench's bizID); stop, when set, ends
	// the sending when closed (the noisy-neighbour run's quiet load).
	bizID string
	stop  <-chan struct{}
	// sent, when set, is closed when this load's sending ends; split,
	// when set, splits this load's commit-to-forward latency at its
	// closing (CenterResult.BeforeSplit, AfterSplit).
	sent  chan struct{}
	split <-chan struct{}
	// forwards and places, when set, collect this load's forward
	// timestamps and its messages' commits and forwards (the
	// place-in-line measure, placeinline.go).
	forwards *forwardLog
	places   *placeLog
}

func load(ctx context.Context, cfg Config, ps pass, brokers []string, topic string, cb *checkbackServer) (CenterResult, error) {
	var res CenterResult
	tr := newTracker()
	tr.split = ps.split
	tr.forwards, tr.places = ps.forwards, ps.places

	stopReading, err := readForwards(ctx, cfg, brokers, topic, tr)
	if err != nil {
		return res, err
	}
	defer stopReading()

	producers := make([]sender, cfg.Producers)
	for i := range producers {
		if ps.via == ViaHTTP {
			producers[i] = newHTTPSender(ps.ingressAddr, cb.url, cfg.Concurrency)
			defer producers[i].Close()
			continue
		}
		p, err := clientlib.NewProducer(clientlib.WithBrokers(brokers...), clientlib.WithControlTopic(cfg.ControlTopic),
			clientlib.WithDefaultVerify(cb.url), clientlib.WithLogger(cfg.Logger),
			clientlib.WithKgoOptions(kgo.MaxBufferedRecords(1<<16)))
		if err != nil {
			return res, fmt.Errorf("producer: %w", err)
		}
		defer p.Close()
		producers[i] = p
	}

	res.HeapStartMB = heapMB(true)
	schedStart := readSchedLatency()
	res.HeapMaxMB = res.HeapStartMB
	res.HeapSamples = append(res.HeapSamples, HeapSample{0, res.HeapStartMB})

	var (
		next                        atomic.Int64
		sent, committed, rolledBack atomic.Int64
		leftForCB, errCount         atomic.Int64
		firstErr                    atomic.Value
		sending                     = make(chan struct{})
		errRollback                 = errors.New("bench: rollback")
		payload                     = make([]byte, cfg.Payload)
		start                       = time.Now()
		sendEnd                     atomic.Int64
		wg                          sync.WaitGroup
	)
	tr.sentPS.start, tr.fwdPS.start, tr.latPS.start = start, start, start
	fail := func(err error) {
		errCount.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	for i := range cfg.Producers * cfg.Concurrency {
		p := producers[i%cfg.Producers]
		wg.Go(func() {
			var seqBuf []byte
			for {
				seq := next.Add(1) - 1
				if cfg.Messages > 0 && seq >= int64(cfg.Messages) {
					return
				}
				if cfg.Duration > 0 && time.Since(start) >= cfg.Duration {
					return
				}
				if cfg.Rate > 0 {
					due := start.Add(time.Duration(float64(seq) / cfg.Rate * float64(time.Second)))
					if d := time.Until(due); d > 0 {
						select {
						case <-time.After(d): // pacing to the target rate
						case <-lctx.Done():
							return
						}
					}
				}
				if lctx.Err() != nil {
					return
				}
				if ps.stop != nil {
					select {
					case <-ps.stop:
						return
					default:
					}
				}
				seqBuf = strconv.AppendInt(seqBuf[:0], seq, 10)
				key := ps.keyPrefix + "-" + string(seqBuf)
				orderKey, forwardKey := cfg.keys(seq, key)
				msg := clientlib.Message{BizID: cmp.Or(ps.bizID, bizID), Key: key, Payload: payload, ForwardTopic: topic, ForwardKey: forwardKey,
					Headers: []clientlib.Header{{Key: seqHeader, Value: []byte(string(seqBuf))}}, OrderKey: orderKey}
				mctx := lctx
				if cfg.Tracing {
					mctx = tracing.WithProducerSpan(lctx)
				}
				switch kindOf(seq, cfg.RollbackRatio, cfg.CheckbackRatio) {
				case kindCheckback:
					tr.expect(seq, time.Now(), true)
					if err := p.Prepare(mctx, msg); err != nil {
						tr.forget(seq)
						fail(err)
						continue
					}
					sent.Add(1)
					leftForCB.Add(1)
				case kindRollback:
					err := p.Transact(mctx, msg, func(context.Context) error { return errRollback })
					if !errors.Is(err, errRollback) {
						fail(fmt.Errorf("rollback: %w", err))
						continue
					}
					if err != errRollback { //nolint:errorlint // joined with a failed rollback
						fail(err)
					}
					sent.Add(1)
					rolledBack.Add(1)
				default:
					if ps.fromPrepare {
						tr.expect(seq, time.Now(), false)
					}
					var clock time.Time
					err := p.Transact(mctx, msg, func(context.Context) error {
						if !ps.fromPrepare {
							clock = time.Now()
							tr.expect(seq, clock, false)
						}
						return nil
					})
					if err == nil && !clock.IsZero() {
						tr.acked(time.Since(clock))
					}
					if err != nil {
						if !errors.Is(err, clientlib.ErrCommitUnsent) {
							tr.forget(seq)
						}
						fail(err)
						continue
					}
					sent.Add(1)
					committed.Add(1)
				}
			}
		})
	}
	go func() {
		wg.Wait()
		sendEnd.Store(time.Now().UnixNano())
		close(sending)
		if ps.sent != nil {
			close(ps.sent)
		}
	}()

	// Progress and heap samples until everything is forwarded.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastHeap := time.Now()
	var lastFwd int64
	var drainDeadline time.Time
	ok := false
	for !ok {
		select {
		case <-ctx.Done():
			stopLoad()
			wg.Wait()
			return res, ctx.Err()
		case <-sending:
			sending = nil
			drainDeadline = time.Now().Add(cfg.DrainTimeout)
		case <-tick.C:
		}
		if sending == nil && tr.pending.Load() == 0 {
			ok = true
		}
		if time.Since(lastHeap) >= cfg.HeapEvery {
			lastHeap = time.Now()
			mb := heapMB(true)
			res.HeapSamples = append(res.HeapSamples, HeapSample{time.Since(start).Seconds(), mb})
			res.HeapMaxMB = max(res.HeapMaxMB, mb)
		}
		fwd := tr.forwarded.Load()
		tr.mu.Lock()
		p99 := tr.commitH.quantile(.99)
		tr.mu.Unlock()
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "%6.1fs sent %d  forwarded %d (%d/s)  pending %d  errors %d  p99 %s  heap %.0f MB\n",
				time.Since(start).Seconds(), sent.Load(), fwd, fwd-lastFwd, tr.pending.Load(), errCount.Load(),
				p99.Round(100*time.Microsecond), heapMB(false))
		}
		lastFwd = fwd
		if !ok && sending == nil && time.Now().After(drainDeadline) {
			break
		}
		if sending == nil && !ok {
			// Between ticks, check more often so that the end time is exact.
			for range 20 {
				if tr.pending.Load() == 0 {
					ok = true
					break
				}
				select {
				case <-ctx.Done():
					return res, ctx.Err()
				case <-time.After(50 * time.Millisecond): // polling the consumer's progress
				}
			}
		}
	}
	res.HeapEndMB = heapMB(true)
	res.HeapMaxMB = max(res.HeapMaxMB, res.HeapEndMB)
	res.HeapSamples = append(res.HeapSamples, HeapSample{time.Since(start).Seconds(), res.HeapEndMB})
	if cfg.MemProfile != nil {
		if err := pprof.WriteHeapProfile(cfg.MemProfile); err != nil {
			return res, fmt.Errorf("heap profile: %w", err)
		}
	}

	res.Sent, res.Committed, res.RolledBack = sent.Load(), committed.Load(), rolledBack.Load()
	res.LeftForCheckback, res.Errors = leftForCB.Load(), errCount.Load()
	if e, _ := firstErr.Load().(string); e != "" {
		res.FirstError = e
	}
	res.Forwarded, res.Duplicates, res.Missing = tr.forwarded.Load(), tr.duplicates.Load(), tr.pending.Load()
	res.SendSeconds = time.Unix(0, sendEnd.Load()).Sub(start).Seconds()
	if res.SendSeconds > 0 {
		res.SendRate = float64(res.Sent) / res.SendSeconds
	}
	res.CheckbackCalls = cb.calls.Load()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.lastFwd.IsZero() {
		res.ForwardSeconds = tr.lastFwd.Sub(start).Seconds()
		res.ForwardRate = float64(res.Forwarded) / res.ForwardSeconds
	}
	res.CommitToForward = tr.commitH.summary()
	if tr.split != nil {
		b, a := tr.beforeH.summary(), tr.afterH.summary()
		res.BeforeSplit, res.AfterSplit = &b, &a
	}
	res.CommitToSend = tr.sendH.summary()
	res.CommitToAck = tr.ackH.summary()
	res.SchedLatency = schedLatencySince(schedStart)
	res.Checkback = tr.cbH.summary()
	res.SentPerSecond, res.ForwardedPerSecond = tr.sentPS.snapshot(), tr.fwdPS.snapshot()
	res.LatencyPerSecond = tr.latPS.summary()
	if res.SendSeconds > 0 {
		var expected int64
		for _, n := range res.SentPerSecond {
			expected += n
		}
		if s, ok := slowestSecond(res.SentPerSecond, res.ForwardedPerSecond, float64(expected)/res.SendSeconds); ok {
			res.SlowestSecond = &s
		}
	}
	if !tr.lastCB.IsZero() {
		res.CheckbackRate = float64(tr.cbH.n) / tr.lastCB.Sub(start).Seconds()
		if ns := cb.first.Load(); ns != 0 {
			first := time.Unix(0, ns)
			res.FirstCheckbackSeconds = first.Sub(start).Seconds()
			if d := tr.lastCB.Sub(first); d > 0 {
				res.CheckbackCallRate = float64(tr.cbH.n) / d.Seconds()
			}
		}
	}
	return res, nil
}
