package center

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/trends"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/app/retention"
	"github.com/eventcenter/eventcenter/app/storemetrics"
	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/internal/version"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/tracing"
	"github.com/eventcenter/eventcenter/verifier"
	"github.com/eventcenter/eventcenter/verifier/resolver"
)

// Options are the things a configuration file cannot say: test hooks and
// the process's logger and registry.
type Options struct {
	Logger *slog.Logger
	// Registry receives every metric; nil makes a new one.
	Registry *prometheus.Registry
	// Registerer, when set, is what the center registers its metrics
	// with instead of Registry; it must pass them on to Registry, which
	// /metrics serves (tests record the families: app/deploycheck).
	Registerer prometheus.Registerer
	// KafkaOptions are appended to every franz-go client the center makes
	// (the control consumer, Kafka targets, the DLQ reader).
	KafkaOptions []kgo.Opt
	// Targets add or replace forward targets by name (tests).
	Targets map[string]forwarder.Target
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// CheckbackTransport carries check-back calls (tests); nil is the default.
	CheckbackTransport http.RoundTripper
	// Listener, when set, is used instead of listening on http.listen.
	Listener net.Listener
	// TopicCheckInterval is how often a missing control topic is looked
	// for again (tests); zero means 5s.
	TopicCheckInterval time.Duration
	// TracerProvider, when set, records the center's spans (ingest,
	// check-back calls, forward; see tracing); nil is tracing off.
	// main builds it from the OTEL_* variables (tracing.FromEnv).
	TracerProvider trace.TracerProvider
	// SecretCheckInterval is how often secret files are looked at for
	// changes (tests); zero means 10s. SIGHUP re-reads them at once.
	SecretCheckInterval time.Duration
	// LevelInterval is how often the instance reports its feature level
	// and reads the cluster's (tests); zero means 5s.
	LevelInterval time.Duration
	// IngressListener, when set, serves the producer API (ingress) instead
	// of listening on ingress.listen, and turns it on.
	IngressListener net.Listener
	// StartComponent, when set, runs each component's Start and is told
	// the component's name (forwarder, verifier, ingest, and the small
	// periodic ones: see Center.Start). The bench starts each under a
	// pprof label naming it, which its goroutines inherit, so that a CPU
	// profile splits by component. nil calls Start.
	StartComponent func(ctx context.Context, component string, start func(context.Context) error) error
}

// Center is one running instance.
type Center struct {
	cfg      config.Config
	log      *slog.Logger
	registry *prometheus.Registry
	// registerer is where metrics are registered (Options.Registerer).
	registerer prometheus.Registerer
	// startComponent is Options.StartComponent.
	startComponent func(ctx context.Context, component string, start func(context.Context) error) error

	Store     store.Store
	Owned     *ingest.Ownership
	targets   map[string]forwarder.Target
	Forwarder *forwarder.Forwarder
	Verifier  *verifier.Verifier
	// resolver finds the providers of registry check-back endpoints.
	resolver *resolver.ZooKeeper
	// Ingester consumes the default lane (kafka.control_topic).
	Ingester *ingest.Ingester
	// ingesters are every lane's, the default lane's first (lanes.go).
	ingesters []*ingest.Ingester
	purger    *retention.Purger
	gauges    *storemetrics.Collector
	trends    *trends.Sampler
	dlqClient *kgo.Client
	pool      *pgxpool.Pool
	topics    *topicWatch
	secrets   *secrets
	level     *levelGate
	counts    *storemetrics.CountsCache

	listener net.Listener
	server   *http.Server
	served   chan error
	started  atomic.Bool
	// producerAPI is the producer HTTP API; nil when off.
	producerAPI *producerAPI

	stopOnce sync.Once
	stopErr  error
}

// New builds a center; nothing runs until Start. On error everything
// already opened is closed. Each component has a constructor of its own
// below, called here in dependency order.
func New(ctx context.Context, cfg config.Config, opt Options) (_ *Center, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Registry == nil {
		opt.Registry = prometheus.NewRegistry()
	}
	c := &Center{cfg: cfg, log: opt.Logger, registry: opt.Registry, Owned: ingest.NewOwnership(), targets: map[string]forwarder.Target{}, startComponent: opt.StartComponent}
	defer func() {
		if err != nil {
			c.closeAll()
		}
	}()
	c.registerer = opt.Registry
	if opt.Registerer != nil {
		c.registerer = opt.Registerer
	}
	registerProcessMetrics(c.registerer)

	c.secrets = newSecrets(cfg, opt.Logger.With("component", "secrets"), opt.SecretCheckInterval, c.registerer)
	if err := c.checkKafka(ctx, cfg, opt); err != nil {
		return nil, err
	}
	kafkaAuth, err := cfg.Kafka.Auth.Options()
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	if c.Store, c.pool, err = OpenStore(ctx, cfg.Store, opt.Now, opt.Logger); err != nil {
		return nil, err
	}
	if err := c.buildTargets(cfg, opt); err != nil {
		return nil, err
	}
	c.newTrends(opt)
	if err := c.newForwarder(cfg, opt); err != nil {
		return nil, err
	}
	// The fast path: ingest, check-back answers and operator actions apply
	// through the forwarder, which sends inline what they make sendable
	// (written sent at once) and leases (forward.lease) and hands over the
	// rest.
	fast := c.Forwarder.FastPath(c.Store)
	warnSendLease(cfg, opt.Logger)
	checkAfter, err := c.newVerifier(cfg, opt, fast)
	if err != nil {
		return nil, err
	}
	if err := c.newIngesters(cfg, opt, kafkaAuth, fast, checkAfter); err != nil {
		return nil, err
	}
	c.newPurger(cfg, opt)
	c.newStoreGauges(cfg, opt)

	handler, err := c.httpHandler(cfg, opt)
	if err != nil {
		return nil, err
	}
	if c.producerAPI, err = c.newProducerAPI(cfg, opt); err != nil {
		return nil, err
	}
	c.topics = newTopicWatch(cfg.Kafka, kadm.NewClient(c.dlqClient), opt.TopicCheckInterval, opt.Now, opt.Logger.With("component", "topics"))
	c.level = c.newLevelGate(cfg, opt)
	c.server = newHTTPServer(cfg.HTTP, handler)
	c.listener = opt.Listener
	return c, nil
}

// registerProcessMetrics registers the Go runtime's and the process's
// metrics and eventcenter_build_info.
func registerProcessMetrics(reg prometheus.Registerer) {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "eventcenter_build_info", Help: "Build information; always 1.",
	}, []string{"version", "commit", "goversion"})
	buildInfo.WithLabelValues(version.Version, version.Commit, version.GoVersion()).Set(1)
	reg.MustRegister(buildInfo)
}

// newTrends makes the console's charts of the last hour. The gauges and
// the console's trends share one count of the table: its cost grows with
// the table (a large scheduled backlog).
func (c *Center) newTrends(opt Options) {
	c.counts = storemetrics.NewCountsCache(c.Store, 0, 0, opt.Now)
	c.trends = trends.New(trends.Config{Now: opt.Now, Logger: opt.Logger.With("component", "trends")}, c.counts)
}

// newForwarder makes the forwarder over the targets (forward.*).
func (c *Center) newForwarder(cfg config.Config, opt Options) (err error) {
	// The settings' part (app/config maps them); the rest is the center's.
	fc := cfg.ForwarderConfig()
	fc.Targets = c.targets
	fc.Ordered = c.Ordering
	fc.WriteAhead = c.WritingAhead
	fc.Now = opt.Now
	fc.Logger = opt.Logger.With("component", "forwarder")
	fc.Registerer = c.registerer
	fc.OnSent = c.trends.Forwarded
	c.Forwarder, err = forwarder.New(fc, c.Store, c.Owned)
	if err != nil {
		return fmt.Errorf("forwarder: %w", err)
	}
	return nil
}

// warnSendLease reports an ingest.send_lease that is set: it no longer
// sets a lease of its own.
func warnSendLease(cfg config.Config, log *slog.Logger) {
	if l := cfg.Ingest.SendLease; l != config.Default().Ingest.SendLease && l != cfg.Forward.Lease {
		log.Warn("ingest.send_lease is deprecated and ignored: handed-over messages are leased for forward.lease",
			"ingest.send_lease", l, "forward.lease", cfg.Forward.Lease)
	}
}

// newVerifier makes the check-back verifier (checkback.*), applying
// through the fast path; it returns the first check-back delay per bizID,
// which ingest stamps on PREPAREs that carry none.
func (c *Center) newVerifier(cfg config.Config, opt Options, fast store.Store) (checkAfter func(bizID string) time.Duration, err error) {
	// The settings' part (app/config maps them); the rest is the center's.
	vcfg := cfg.VerifierConfig()
	vcfg.Transport = opt.CheckbackTransport
	vcfg.Logger = opt.Logger.With("component", "verifier")
	vcfg.Now = opt.Now
	vcfg.Registerer = c.registerer
	vcfg.TracerProvider = opt.TracerProvider
	vcfg.OnOutcome = func(endpoint, outcome string) {
		if outcome == "error" {
			outcome = trends.Failed
		}
		c.trends.Checkback(endpoint, outcome)
	}
	for id, b := range vcfg.BizIDs {
		b.SecretSource = c.secrets.BizSecret(id)
		vcfg.BizIDs[id] = b
	}
	// Check-backs addressed to a registry (zookeeper://) find their
	// providers here; a registry's session opens at its first use.
	c.resolver, err = resolver.NewZooKeeper(resolver.Config{Registerer: c.registerer, Logger: opt.Logger.With("component", "resolver")})
	if err != nil {
		return nil, fmt.Errorf("registry resolver: %w", err)
	}
	vcfg.Resolver = c.resolver
	c.Verifier, err = verifier.New(vcfg, fast, c.Owned)
	if err != nil {
		return nil, fmt.Errorf("verifier: %w", err)
	}
	return vcfg.FirstDelay, nil
}

// newIngesters makes every lane's control-topic consumer (kafka.*,
// ingest.*), storing through the fast path.
func (c *Center) newIngesters(cfg config.Config, opt Options, kafkaAuth []kgo.Opt, fast store.Store, checkAfter func(bizID string) time.Duration) (err error) {
	ingestOpts := []kgo.Opt{
		kgo.ClientID(cfg.Kafka.ClientID),
		kgo.SessionTimeout(cfg.Kafka.SessionTimeout),
		kgo.HeartbeatInterval(max(cfg.Kafka.SessionTimeout/10, 100*time.Millisecond)),
	}
	if cfg.Kafka.MetadataMaxAge > 0 {
		// New control-topic partitions are consumed after at most this long.
		// franz-go refuses a max age below the min age (default 5s).
		ingestOpts = append(ingestOpts, kgo.MetadataMaxAge(cfg.Kafka.MetadataMaxAge),
			kgo.MetadataMinAge(min(cfg.Kafka.MetadataMaxAge, 5*time.Second)))
	}
	var ingestStore ingest.Store = fast
	if opt.TracerProvider != nil {
		ingestStore = tracing.Store(fast, opt.TracerProvider)
	}
	// The settings' part (app/config maps them); the rest is the center's.
	base := cfg.IngestConfig()
	// kafka.create_topics creates the dead-letter topics too (each lane's
	// ingester its own), with the control topic's partitions.
	base.CreateDLQPartitions = createDLQPartitions(cfg.Kafka)
	base.CheckAfter = checkAfter
	base.CheckDue = c.Verifier.DueAt
	base.CheckTopic = targetTopicCheck(cfg.Forward)
	base.Scheduling = c.Scheduling
	base.ClientOptions = append(append(ingestOpts, kafkaAuth...), opt.KafkaOptions...)
	base.Now = opt.Now
	base.Logger = opt.Logger.With("component", "ingest")
	if c.ingesters, err = newLaneIngesters(base, cfg.Kafka, c.registerer, ingestStore, c.Owned); err != nil {
		return err
	}
	c.Ingester = c.ingesters[0]
	return nil
}

// newPurger makes the retention purge (retention.*).
func (c *Center) newPurger(cfg config.Config, opt Options) {
	c.purger = retention.New(retention.Config{
		Period: cfg.Retention.Period, AuditPeriod: cfg.Retention.AuditPeriod, Interval: cfg.Retention.Interval, Batch: cfg.Retention.Batch,
		Now: opt.Now, Logger: opt.Logger.With("component", "retention"), Registerer: c.registerer,
	}, c.Store)
}

// newStoreGauges makes the gauges of the store's contents.
func (c *Center) newStoreGauges(cfg config.Config, opt Options) {
	c.gauges = storemetrics.New(storemetrics.Config{
		BizIDs: cfg.MetricBizIDs(), Now: opt.Now, Logger: opt.Logger.With("component", "storemetrics"), Registerer: c.registerer,
		Counts: c.counts.Counts,
	}, c.Store)
}

// buildTargets makes the forward targets of forward.targets, adds the
// tests' (Options.Targets), and wraps each in forward spans when tracing.
func (c *Center) buildTargets(cfg config.Config, opt Options) error {
	for _, t := range cfg.Forward.Targets {
		if _, ok := opt.Targets[t.Name]; ok {
			continue
		}
		target, err := newTarget(t, cfg, opt)
		if err != nil {
			return fmt.Errorf("forward target %q: %w", t.Name, err)
		}
		c.targets[t.Name] = target
	}
	for name, t := range opt.Targets {
		c.targets[name] = t
	}
	if opt.TracerProvider != nil {
		for name, t := range c.targets {
			c.targets[name] = tracing.Target(name, t, opt.TracerProvider)
		}
	}
	return nil
}

func (c *Center) httpHandler(cfg config.Config, opt Options) (http.Handler, error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(c.registry, promhttp.HandlerOpts{Registry: c.registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", c.ready)
	tokens := make([]admin.Token, 0, len(cfg.Admin.Tokens))
	for _, t := range cfg.Admin.Tokens {
		tokens = append(tokens, admin.Token{Name: t.Name, Token: t.Token, Scope: t.Scope})
	}
	kafkaAuth, err := cfg.Kafka.Auth.Options()
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	// It also writes replayed dead letters to the control topics.
	compression, err := kafkarec.CompressionOpt(cfg.Kafka.Compression)
	if err != nil {
		return nil, fmt.Errorf("kafka.compression: %w", err)
	}
	dlqClient, err := kgo.NewClient(append(append([]kgo.Opt{kgo.SeedBrokers(cfg.Kafka.Brokers...), kgo.ClientID(cfg.Kafka.ClientID + "-admin"), compression}, kafkaAuth...), opt.KafkaOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("dead-letter client: %w", err)
	}
	c.dlqClient = dlqClient
	api, err := admin.NewHandler(admin.Config{
		Tokens:      tokens,
		TokenSource: c.secrets.Tokens,
		Insecure:    cfg.Admin.Insecure,
		// Ingest's in-process counts, for the console and /counts.
		DifferingPrepares: c.differingPrepares,
		Trends:            c.trends,
		Forwarding:        c.bizForwarding,
		Checkbacks:        c.bizCheckbacks,
		Targets:           c.targetThrottles,
		Registries:        c.registries,
		// Each extra lane's dead letters replay to its own control topic.
		LaneDLQs:   laneDLQs(cfg.Kafka, dlqClient),
		Now:        opt.Now,
		Logger:     opt.Logger.With("component", "admin"),
		Registerer: c.registerer,
	}, c.Forwarder.FastPath(c.Store), admin.NewKafkaDLQ(dlqClient, cfg.Kafka.DLQ(), cfg.Kafka.ControlTopic))
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	// The operator's side is capped; metrics and probes are not, so that a
	// flood of admin requests does not fail the liveness probe.
	api = capRequests(cfg.HTTP.MaxConcurrent, api)
	mux.Handle("/api/", api)
	mux.Handle("/ui", api)
	mux.Handle("/ui/", api)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	})
	return mux, nil
}

// ready answers 200 when the instance can do its share of the work, 503
// with the reason otherwise. The rule: the store answers, every component
// has started, the control topic (and every lane's) exists, each lane's
// control consumer is in its group with an assignment from it, and it is
// consuming (a fetch answered since its last failed broker connection;
// see ingest.Consuming). The assignment may be empty: with
// more instances than control-topic partitions some instance owns none and
// is still ready (it takes over when another leaves), so "owns at least one
// partition" would keep healthy spares out of service forever.
func (c *Center) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	// An empty bizID never exists (envelopes require one); a NUL byte would
	// be rejected by PostgreSQL's text type.
	if _, err := c.Store.Get(ctx, "", "readyz"); err != nil && !errors.Is(err, store.ErrNotFound) {
		// The error may name hosts, users or databases: only for a
		// holder of an admin token (any scope); it is logged anyway.
		if c.secrets.bearerOK(r) {
			http.Error(w, "store: "+err.Error(), http.StatusServiceUnavailable)
		} else {
			http.Error(w, "store: unavailable (details in the log, or send an admin token)", http.StatusServiceUnavailable)
		}
		c.log.Warn("readyz: store check failed", "err", err)
		return
	}
	if !c.started.Load() {
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	if problem := c.topics.Problem(); problem != "" {
		http.Error(w, problem, http.StatusServiceUnavailable)
		return
	}
	if msg := c.lanesReady(c.secrets.bearerOK(r)); msg != "" {
		http.Error(w, msg, http.StatusServiceUnavailable)
		return
	}
	_, _ = fmt.Fprintf(w, "ok: owns %d partitions\n", len(c.Owned.Partitions()))
	if n := len(c.ingesters) - 1; n > 0 {
		_, _ = fmt.Fprintf(w, "control lanes: the default and %d more, every one consuming\n", n)
	}
	lv := c.level.State()
	_, _ = fmt.Fprintf(w, "cluster level %d, this instance %d: %s\n", lv.Level, FeatureLevel, lv.Reason)
	_, _ = fmt.Fprintln(w, orderingState(lv, c.Ordering(), c.level.orderOff))
	if c.level.reg != nil {
		_, _ = fmt.Fprintln(w, aheadState(lv, c.WritingAhead()))
	}
	on, _ := c.Scheduling()
	_, _ = fmt.Fprintln(w, schedulingState(on, lv))
	for _, line := range registryLines(c.resolver.Status()) {
		_, _ = fmt.Fprintln(w, line)
	}
}

// Addr is the HTTP server's address once started.
func (c *Center) Addr() string {
	if c.listener == nil {
		return ""
	}
	return c.listener.Addr().String()
}

// Registry is where the center's metrics live.
func (c *Center) Registry() *prometheus.Registry { return c.registry }

// Start starts every component in dependency order and the HTTP server.
func (c *Center) Start(ctx context.Context) error {
	if c.listener == nil {
		l, err := net.Listen("tcp", c.cfg.HTTP.Listen)
		if err != nil {
			// Release what New opened (Kafka clients, the store), as the
			// other failures below do.
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = c.Stop(stopCtx)
			return fmt.Errorf("listen on http.listen %s: %w", c.cfg.HTTP.Listen, err)
		}
		c.listener = l
	}
	c.served = make(chan error, 1)
	go func() { c.served <- c.server.Serve(c.listener) }()
	if c.producerAPI != nil {
		if err := c.producerAPI.start(c.cfg.Ingress.Listen); err != nil {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = c.Stop(stopCtx)
			return err
		}
	}
	// The cluster level once, before the forwarder and ingest start: a
	// restarted center knows at once whether per-key order is on.
	c.level.tick(ctx)
	startComponent := c.startComponent
	if startComponent == nil {
		startComponent = func(ctx context.Context, _ string, start func(context.Context) error) error { return start(ctx) }
	}
	for _, s := range []struct {
		name, component string
		start           func(context.Context) error
	}{
		{"secret files", "secrets", c.secrets.Start},
		{"forwarder", "forwarder", c.Forwarder.Start},
		{"registry resolver", "resolver", c.resolver.Start},
		{"verifier", "verifier", c.Verifier.Start},
		{"control topic check", "topics", c.topics.Start},
		{"ingest", "ingest", c.startIngest},
		{"retention", "retention", c.purger.Start},
		{"store metrics", "gauges", c.gauges.Start},
		{"cluster level", "level", c.level.Start},
		{"trends", "trends", c.trends.Start},
	} {
		if err := startComponent(ctx, s.component, s.start); err != nil {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = c.Stop(stopCtx)
			return fmt.Errorf("start %s: %w", s.name, err)
		}
	}
	c.started.Store(true)
	c.log.Info("eventcenter started", "http", c.Addr(), "producer_api", c.IngressAddr(), "control_topic", c.cfg.Kafka.ControlTopic, "version", version.Version)
	return nil
}

// Stop stops everything in reverse order and releases resources, after
// Start or after a failed Start. Later calls return the first call's result.
func (c *Center) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() { c.stopErr = c.stop(ctx) })
	return c.stopErr
}

func (c *Center) stop(ctx context.Context) error {
	var errs []error
	step := func(name string, stop func(context.Context) error) {
		if err := stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", name, err))
		}
	}
	c.started.Store(false)
	// 0. No more producer API requests (those in flight finish).
	if c.producerAPI != nil {
		step("producer API", c.producerAPI.stop)
		c.producerAPI = nil
	}
	step("control topic check", c.topics.Stop)
	// 1. Stop consuming: ingest finishes its batch and commits offsets.
	step("ingest", c.stopIngest)
	// 2. Check-backs and sends drain; sent marks are flushed.
	step("verifier", c.Verifier.Stop)
	step("registry resolver", c.resolver.Stop)
	step("forwarder", c.Forwarder.Stop)
	step("retention", c.purger.Stop)
	step("store metrics", c.gauges.Stop)
	step("trends", c.trends.Stop)
	step("secret files", c.secrets.Stop)
	step("cluster level", c.level.Stop)
	// 3. The HTTP server, then clients and the store.
	if c.served != nil {
		step("http", c.server.Shutdown)
		if err := <-c.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("serve http: %w", err))
		}
	}
	c.closeAll()
	return errors.Join(errs...)
}

func (c *Center) closeAll() {
	if c.producerAPI != nil { // built, never started
		c.producerAPI.client.Close()
		c.producerAPI = nil
	}
	for name, t := range c.targets {
		if err := t.Close(); err != nil {
			c.log.Warn("close forward target", "target", name, "err", err)
		}
	}
	c.targets = nil
	if c.dlqClient != nil {
		c.dlqClient.Close()
		c.dlqClient = nil
	}
	if c.Store != nil {
		if err := c.Store.Close(); err != nil {
			c.log.Warn("close store", "err", err)
		}
		c.Store = nil
	}
	if c.pool != nil {
		c.pool.Close()
		c.pool = nil
	}
}

// createDLQPartitions is ingest.Config.CreateDLQPartitions: the control
// topic's partition count with kafka.create_topics, else 0 (report only).
func createDLQPartitions(k config.Kafka) int {
	if !k.CreateTopics {
		return 0
	}
	return k.ControlPartitions
}
