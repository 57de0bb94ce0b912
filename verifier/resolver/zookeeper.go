package resolver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/internal/startstop"
)

// Defaults of Config.
const (
	DefaultSessionTimeout = 10 * time.Second
	DefaultRetryBase      = 200 * time.Millisecond
	DefaultRetryCap       = 10 * time.Second
	DefaultMaxServices    = 1000
)

// Config configures a ZooKeeper resolver. The zero value takes the
// defaults.
type Config struct {
	// SessionTimeout is the ZooKeeper session timeout asked for (the
	// server bounds it by its tickTime). Default 10s.
	SessionTimeout time.Duration
	// RetryBase and RetryCap bound the doubling pause between failed reads
	// of a provider list. Defaults 200ms and 10s.
	RetryBase, RetryCap time.Duration
	// MaxServices bounds the services watched per registry: a PREPARE
	// naming one more is refused a provider (the interfaces come from the
	// control topic). Default 1000.
	MaxServices int
	// Registerer receives the registry metrics (none when nil).
	Registerer prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.RetryCap < c.RetryBase {
		c.RetryCap = max(DefaultRetryCap, c.RetryBase)
	}
	if c.MaxServices <= 0 {
		c.MaxServices = DefaultMaxServices
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// ZooKeeper resolves registry endpoints through ZooKeeper, one session per
// registry (ensemble), opened at its first use.
type ZooKeeper struct {
	cfg Config
	log *slog.Logger
	m   *metrics

	mu   sync.Mutex
	regs map[string]*registry
	ctx  context.Context // the run's: ends at Stop
	wg   sync.WaitGroup  // watch goroutines

	startstop.Base
}

// NewZooKeeper builds a ZooKeeper resolver; Start it before use.
func NewZooKeeper(cfg Config) (*ZooKeeper, error) {
	cfg.setDefaults()
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &ZooKeeper{cfg: cfg, log: cfg.Logger, m: m, regs: map[string]*registry{}}, nil
}

// Start makes the resolver ready; sessions open at first use. Stop closes
// every session and waits for the watches to end.
func (z *ZooKeeper) Start(ctx context.Context) error {
	return z.StartFunc(ctx, func(r startstop.Run) (func() error, error) {
		z.mu.Lock()
		z.ctx = r.Ctx
		z.mu.Unlock()
		return func() error {
			<-r.Ctx.Done()
			z.mu.Lock()
			regs := z.regs
			z.regs = map[string]*registry{}
			z.mu.Unlock()
			for _, reg := range regs {
				reg.conn.Close()
			}
			z.wg.Wait()
			return nil
		}, nil
	})
}

// registry is one ZooKeeper ensemble and the services watched there.
type registry struct {
	name    string // the first server, for labels and messages
	servers []string
	conn    *zk.Conn

	connected atomic.Bool
	since     atomic.Int64 // unix nanoseconds of the last connection change
	expiries  atomic.Int64

	mu       sync.Mutex
	services map[string]*service
}

// service is the provider list of one interface in one registry.
type service struct {
	iface string
	ready chan struct{} // closed once the first read ended, well or not

	mu      sync.RWMutex
	list    []providerURL
	known   bool      // a list was read at least once
	err     error     // the last read's error (nil after a good read)
	updated time.Time // of the last good read
	gen     uint64    // counts good reads
	// built caches, per registry endpoint as written, the providers it
	// may call out of list generation gen.
	built map[string]builtList
}

type builtList struct {
	gen   uint64
	provs []Provider
	err   error
}

// maxBuilt bounds a service's cache of built lists; when full it starts
// over.
const maxBuilt = 256

// Providers returns the providers ep (a zookeeper:// endpoint) may call,
// from the service's cached list once it was read; the first call for a
// service opens its registry's session when needed, reads the list and
// sets its watch, waiting at most until ctx ends. With no provider to call
// the error is a *NoProviderError that names the service and the registry.
// The slice is shared: do not modify it.
func (z *ZooKeeper) Providers(ctx context.Context, ep checkback.Endpoint) ([]Provider, error) {
	if ep.Protocol != checkback.ProtoRegistry || len(ep.Registry) == 0 {
		return nil, errNotRegistry(ep)
	}
	s, reg, err := z.service(ep)
	if err != nil {
		return nil, err
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, &NoProviderError{Service: ep.Interface, Registry: reg.name,
			Reason: fmt.Sprintf("registry zookeeper://%s did not give the providers of %s in time (%v)", reg.name, ep.Interface, context.Cause(ctx))}
	}
	s.mu.RLock()
	b, ok := s.built[ep.Raw]
	known, gen, readErr := s.known, s.gen, s.err
	s.mu.RUnlock()
	if ok && b.gen == gen && known {
		return b.provs, b.err
	}
	if !known {
		return nil, &NoProviderError{Service: ep.Interface, Registry: reg.name,
			Reason: fmt.Sprintf("registry zookeeper://%s has given no provider list of %s yet: %v", reg.name, ep.Interface, readErr)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	provs, err := selectProviders(ep, reg.name, s.list)
	if len(s.built) >= maxBuilt {
		clear(s.built)
	}
	s.built[ep.Raw] = builtList{gen: s.gen, provs: provs, err: err}
	return provs, err
}

// service returns the watched service of ep, starting its watch (and its
// registry's session) at first use.
func (z *ZooKeeper) service(ep checkback.Endpoint) (*service, *registry, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.ctx == nil || z.ctx.Err() != nil {
		return nil, nil, fmt.Errorf("resolve %s: the registry resolver is not running", ep)
	}
	key := registryKey(ep)
	reg := z.regs[key]
	if reg == nil {
		var err error
		if reg, err = z.connect(ep.Registry); err != nil {
			return nil, nil, err
		}
		z.regs[key] = reg
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	s := reg.services[ep.Interface]
	if s == nil {
		if len(reg.services) >= z.cfg.MaxServices {
			return nil, nil, &NoProviderError{Service: ep.Interface, Registry: reg.name,
				Reason: fmt.Sprintf("registry zookeeper://%s already has %d services watched (the limit): %s is not looked up", reg.name, len(reg.services), ep.Interface)}
		}
		s = &service{iface: ep.Interface, ready: make(chan struct{}), built: map[string]builtList{}}
		reg.services[ep.Interface] = s
		z.m.services.WithLabelValues(reg.name).Set(float64(len(reg.services)))
		z.m.empty.WithLabelValues(reg.name).Inc()
		z.wg.Add(1)
		go func() {
			defer z.wg.Done()
			z.watch(z.ctx, reg, s)
		}()
	}
	return s, reg, nil
}

// connect opens a session with the ensemble; the client connects and
// reconnects in the background.
func (z *ZooKeeper) connect(servers []string) (*registry, error) {
	reg := &registry{name: servers[0], servers: servers, services: map[string]*service{}}
	reg.since.Store(time.Now().UnixNano())
	log := z.log.With("registry", reg.name)
	connected := z.m.connected.WithLabelValues(reg.name)
	connected.Set(0)
	expiries := z.m.expiries.WithLabelValues(reg.name)
	conn, _, err := zk.Connect(servers, z.cfg.SessionTimeout,
		zk.WithLogger(zkLogger{log}),
		zk.WithLogInfo(false),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type != zk.EventSession {
				return
			}
			switch ev.State {
			case zk.StateHasSession:
				if !reg.connected.Swap(true) {
					reg.since.Store(time.Now().UnixNano())
					connected.Set(1)
					log.Info("registry connected", "servers", servers)
				}
			case zk.StateExpired:
				reg.expiries.Add(1)
				expiries.Inc()
				log.Warn("registry session expired: the provider lists read so far are kept, and read again once a new session is open")
				fallthrough
			case zk.StateDisconnected, zk.StateConnecting:
				if reg.connected.Swap(false) {
					reg.since.Store(time.Now().UnixNano())
					connected.Set(0)
					log.Warn("registry disconnected: check-backs use the provider lists read so far while the client reconnects")
				}
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("connect to registry zookeeper://%s: %w", reg.name, err)
	}
	reg.conn = conn
	return reg, nil
}

// watch keeps s's list current: read it with a child watch, wait for the
// watch to fire (or to be lost with the session), read again. A read that
// fails keeps the last list and is retried after a doubling pause.
func (z *ZooKeeper) watch(ctx context.Context, reg *registry, s *service) {
	path := providersPath(s.iface)
	pause := z.cfg.RetryBase
	first := true
	log := z.log.With("registry", reg.name, "service", s.iface)
	for ctx.Err() == nil {
		children, fired, err := reg.read(path)
		if err != nil {
			s.failed(err)
			if first {
				close(s.ready)
				first = false
			}
			if !errors.Is(err, zk.ErrClosing) {
				log.Debug("read the provider list; retrying", "err", err, "pause", pause)
			}
			t := time.NewTimer(pause)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			pause = min(2*pause, z.cfg.RetryCap)
			continue
		}
		pause = z.cfg.RetryBase
		s.set(children)
		z.m.recount(reg)
		if first {
			close(s.ready)
			first = false
		}
		select {
		case <-ctx.Done():
			return
		case <-fired:
		}
	}
}

// read returns the children of path and a channel that fires when they
// change (or the watch is lost); a path that does not exist reads as no
// children, watched for its creation.
func (reg *registry) read(path string) ([]string, <-chan zk.Event, error) {
	for {
		children, _, ch, err := reg.conn.ChildrenW(path)
		if err == nil {
			return children, ch, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return nil, nil, err
		}
		ok, _, ch, err := reg.conn.ExistsW(path)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, ch, nil
		}
		// Created in between: read its children.
	}
}

func (s *service) set(children []string) {
	list := make([]providerURL, 0, len(children))
	for _, c := range children {
		list = append(list, parseProvider(c))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list, s.known, s.err, s.updated = list, true, nil, time.Now()
	s.gen++
}

func (s *service) failed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// Order returns the providers in the order to try them: a weighted random
// order (each next one drawn in proportion to its weight among those
// left), so the first calls spread over the providers by weight.
func Order(provs []Provider, rnd func() float64) []Provider {
	out := make([]Provider, len(provs))
	copy(out, provs)
	if len(out) < 2 {
		return out
	}
	// Efraimidis–Spirakis: sort by u^(1/w) descending, as -log(u)/w ascending.
	keys := make([]float64, len(out))
	for i, p := range out {
		w := float64(max(p.Weight, 1))
		u := rnd()
		if u <= 0 {
			u = math.SmallestNonzeroFloat64
		}
		keys[i] = -math.Log(u) / w
	}
	sort.Sort(byKey{out, keys})
	return out
}

type byKey struct {
	p []Provider
	k []float64
}

func (b byKey) Len() int           { return len(b.p) }
func (b byKey) Less(i, j int) bool { return b.k[i] < b.k[j] }
func (b byKey) Swap(i, j int) {
	b.p[i], b.p[j] = b.p[j], b.p[i]
	b.k[i], b.k[j] = b.k[j], b.k[i]
}

// zkLogger sends the client's lines to slog at debug.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("zookeeper client: " + fmt.Sprintf(format, args...))
}
