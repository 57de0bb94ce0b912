package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/sqlite"
	"github.com/eventcenter/eventcenter/verifier"
)

// FairCheckback is the noisy-neighbour check-back bench (docs/checkback.md): bizID
// A has a backlog of stale PREPAREs whose check-back endpoint answers in
// SlowAnswer; bizID B PREPAREs at BRate and its endpoint answers at once.
// B's check-back resolution (from due to the decision written) is
// measured alone, then while A's backlog is being checked back, in the
// same run, on one store and one verifier (the center's check-back path,
// defaults from the verifier). Forwarding is not part of it.
type FairCheckback struct {
	// Store is "sqlite" or "postgres"; DSN a PostgreSQL URL (a fresh
	// schema is created and dropped) or a SQLite file (empty: temporary).
	Store string
	DSN   string
	// Backlog is A's stale PREPAREs, all due when B's phase starts.
	Backlog int
	// SlowAnswer is how long A's endpoint takes to answer.
	SlowAnswer time.Duration
	// BRate is B's PREPAREs per second; Phase how long each phase sends.
	BRate float64
	Phase time.Duration
	// Partitions the messages are spread over (all owned).
	Partitions int
	// Workers and EndpointConcurrency are the verifier's (0: its
	// defaults, 64 and 8).
	Workers, EndpointConcurrency int
	// Logger receives the verifier's logs (nil: discard); Progress a
	// line per phase.
	Logger   *slog.Logger
	Progress io.Writer
}

// FairCheckbackReport is the result: B's resolution alone and during A's
// backlog, and what became of A's.
type FairCheckbackReport struct {
	Config FairCheckback
	// Alone and During are B's check-back resolution latencies.
	Alone, During CkLatency
	// Ratio is During.P99 / Alone.P99 (the issue asks for at most 2).
	Ratio float64
	// AResolved is A's check-backs answered by the end of the run;
	// AMaxAttempts the most attempts any of A's messages has recorded
	// (waiting for a limit or its endpoint must not spend them).
	AResolved    int
	AMaxAttempts int
	// BMissing is B's messages not resolved by the end of the wait; they
	// count in During with the time they waited (a lower bound, so Ratio
	// is one too).
	BMissing int
}

// CkLatency summarises latencies in milliseconds.
type CkLatency struct {
	N                  int
	P50, P90, P99, Max float64
}

func ckLatencyOf(ds []time.Duration) CkLatency {
	if len(ds) == 0 {
		return CkLatency{}
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))]) / float64(time.Millisecond)
	}
	return CkLatency{N: len(ds), P50: at(.5), P90: at(.9), P99: at(.99), Max: float64(ds[len(ds)-1]) / float64(time.Millisecond)}
}

func (c *FairCheckback) defaults() {
	c.Store = cmpOr(c.Store, "sqlite")
	if c.Backlog == 0 {
		c.Backlog = 20000
	}
	if c.SlowAnswer == 0 {
		c.SlowAnswer = 2 * time.Second
	}
	if c.BRate == 0 {
		c.BRate = 50
	}
	if c.Phase == 0 {
		c.Phase = 10 * time.Second
	}
	if c.Partitions == 0 {
		c.Partitions = 8
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// resolutionStore records when the verifier writes B's decisions.
type resolutionStore struct {
	verifier.Store
	mu      sync.Mutex
	due     map[string]time.Time // B's keys not resolved yet
	lat     []time.Duration
	aSolved atomic.Int64
}

func (s *resolutionStore) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	res, err := s.Store.Apply(ctx, req)
	if err != nil {
		return res, err
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range req.Changes {
		if c.Event.Kind != state.KindCheckCommit || i >= len(res.Outcomes) || res.Outcomes[i].Stale {
			continue
		}
		if c.BizID == "A" {
			s.aSolved.Add(1)
			continue
		}
		if due, ok := s.due[c.Key]; ok {
			s.lat = append(s.lat, now.Sub(due))
			delete(s.due, c.Key)
		}
	}
	return res, nil
}

// take returns the latencies recorded so far and starts a new list.
func (s *resolutionStore) take() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lat
	s.lat = nil
	return l
}

// waited returns how long each unresolved key has waited so far.
func (s *resolutionStore) waited() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var out []time.Duration
	for _, due := range s.due {
		out = append(out, now.Sub(due))
	}
	return out
}

func (s *resolutionStore) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.due)
}

// RunFairCheckback runs the bench.
func RunFairCheckback(ctx context.Context, cfg FairCheckback) (*FairCheckbackReport, error) {
	cfg.defaults()
	st, closeStore, err := openFairStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer closeStore()

	slowURL, stopSlow, err := serveCheckbacks(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(cfg.SlowAnswer):
		case <-r.Context().Done():
			return
		}
		answerCommit(w, r)
	})
	if err != nil {
		return nil, err
	}
	defer stopSlow()
	fastURL, stopFast, err := serveCheckbacks(answerCommit)
	if err != nil {
		return nil, err
	}
	defer stopFast()

	rs := &resolutionStore{Store: st, due: map[string]time.Time{}}
	owned := ingest.NewOwnership()
	for p := range cfg.Partitions {
		owned.Assign(int32(p))
	}
	v, err := verifier.New(verifier.Config{
		Workers: cfg.Workers, EndpointConcurrency: cfg.EndpointConcurrency,
		Allow:  []string{slowURL, fastURL},
		Policy: verifier.Policy{Timeout: cfg.SlowAnswer + 3*time.Second},
		Lease:  max(verifier.DefaultLease, 3*(cfg.SlowAnswer+3*time.Second)),
		Logger: cfg.Logger,
	}, rs, owned)
	if err != nil {
		return nil, err
	}
	if err := v.Start(ctx); err != nil {
		return nil, err
	}
	defer func() { _ = v.Stop(context.WithoutCancel(ctx)) }()

	rep := &FairCheckbackReport{Config: cfg}
	rep.Config.Logger, rep.Config.Progress = nil, nil
	fmt.Fprintf(cfg.Progress, "phase 1: B alone, %.0f/s for %s\n", cfg.BRate, cfg.Phase)
	if err := prepareB(ctx, st, rs, cfg, "alone", fastURL, v.DueAt); err != nil {
		return nil, err
	}
	if err := waitResolved(ctx, rs, 30*time.Second); err != nil {
		return nil, fmt.Errorf("B alone: %w", err)
	}
	rep.Alone = ckLatencyOf(rs.take())

	fmt.Fprintf(cfg.Progress, "phase 2: %d stale PREPAREs of A (answers in %s), then B at %.0f/s for %s\n",
		cfg.Backlog, cfg.SlowAnswer, cfg.BRate, cfg.Phase)
	if err := prepareBacklog(ctx, st, cfg, slowURL); err != nil {
		return nil, err
	}
	if err := prepareB(ctx, st, rs, cfg, "during", fastURL, v.DueAt); err != nil {
		return nil, err
	}
	err = waitResolved(ctx, rs, time.Minute)
	rep.BMissing = rs.pending()
	rep.During = ckLatencyOf(append(rs.take(), rs.waited()...))
	if rep.Alone.P99 > 0 {
		rep.Ratio = rep.During.P99 / rep.Alone.P99
	}
	rep.AResolved = int(rs.aSolved.Load())
	if rep.AMaxAttempts, err = maxAttempts(ctx, st, "A", cfg.Backlog, err); err != nil {
		return rep, err
	}
	return rep, nil
}

// maxAttempts reads the most check-back attempts recorded on bizID's
// messages (a sample: every 97th).
func maxAttempts(ctx context.Context, st store.Store, bizID string, n int, prev error) (int, error) {
	most := 0
	for i := 0; i < n; i += 97 {
		m, err := st.Get(ctx, bizID, fmt.Sprintf("a-%07d", i))
		if err != nil {
			return most, errors.Join(prev, err)
		}
		most = max(most, m.VerifyAttempts)
	}
	return most, prev
}

func waitResolved(ctx context.Context, rs *resolutionStore, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for rs.pending() > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of B's check-backs not resolved within %s", rs.pending(), limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// prepareB writes B's PREPAREs at cfg.BRate for cfg.Phase, one Apply each
// (as ingest writes a message that arrives alone), due at once, and tells
// dueAt (the verifier's DueAt) when, as ingest does.
func prepareB(ctx context.Context, st store.Store, rs *resolutionStore, cfg FairCheckback, phase, url string, dueAt func(time.Time)) error {
	every := time.Duration(float64(time.Second) / cfg.BRate)
	tick := time.NewTicker(every)
	defer tick.Stop()
	end := time.Now().Add(cfg.Phase)
	for i := 0; time.Now().Before(end); i++ {
		key := fmt.Sprintf("b-%s-%06d", phase, i)
		at := time.Now()
		rs.mu.Lock()
		rs.due[key] = at
		rs.mu.Unlock()
		if _, err := st.Apply(ctx, store.ApplyRequest{Changes: []store.Change{prepareChange("B", key, int32(i%cfg.Partitions), at, url)}}); err != nil {
			return fmt.Errorf("prepare %s: %w", key, err)
		}
		dueAt(at)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// prepareBacklog writes A's PREPAREs, due a minute ago (older than any of
// B's), in batches of 1,000.
func prepareBacklog(ctx context.Context, st store.Store, cfg FairCheckback, url string) error {
	at := time.Now().Add(-time.Minute)
	for lo := 0; lo < cfg.Backlog; lo += 1000 {
		var cs []store.Change
		for i := lo; i < min(lo+1000, cfg.Backlog); i++ {
			cs = append(cs, prepareChange("A", fmt.Sprintf("a-%07d", i), int32(i%cfg.Partitions), at.Add(time.Duration(i)*time.Microsecond), url))
		}
		if _, err := st.Apply(ctx, store.ApplyRequest{Changes: cs}); err != nil {
			return fmt.Errorf("prepare A's backlog: %w", err)
		}
	}
	return nil
}

func prepareChange(bizID, key string, partition int32, at time.Time, url string) store.Change {
	return store.Change{BizID: bizID, Key: key, Partition: partition, Event: state.Event{
		Kind: state.KindPrepare, At: at,
		Body: &state.Body{Payload: []byte("payload"), Topic: "orders", Verify: url + "/check"},
	}}
}

func answerCommit(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(checkback.HTTPAnswer(r.URL.Query().Get("messageKey"), checkback.DecisionCommit))
}

// serveCheckbacks starts an HTTP check-back endpoint on a free local port.
func serveCheckbacks(h http.HandlerFunc) (origin string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen for check-backs: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return "http://" + ln.Addr().String(), func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}, nil
}

// openFairStore opens a fresh store for the bench.
func openFairStore(ctx context.Context, cfg FairCheckback) (store.Store, func(), error) {
	switch cfg.Store {
	case "sqlite":
		path := cfg.DSN
		dir := ""
		if path == "" {
			d, err := os.MkdirTemp("", "ecbench-fairck-")
			if err != nil {
				return nil, nil, err
			}
			dir, path = d, filepath.Join(d, "fairck.db")
		}
		st, err := sqlite.Open(ctx, path, sqlite.Options{Logger: cfg.Logger})
		if err != nil {
			return nil, nil, err
		}
		return st, func() {
			_ = st.Close()
			if dir != "" {
				_ = os.RemoveAll(dir)
			}
		}, nil
	case "postgres":
		schema := "ecbench_fairck_" + randomID()
		dsn, drop, err := freshSchema(ctx, cfg.DSN, schema)
		if err != nil {
			return nil, nil, err
		}
		pc, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			drop()
			return nil, nil, err
		}
		postgres.ConfigurePool(pc)
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			drop()
			return nil, nil, err
		}
		if err := postgres.Migrate(ctx, pool); err != nil {
			pool.Close()
			drop()
			return nil, nil, err
		}
		st, err := postgres.New(pool, postgres.Options{Logger: cfg.Logger})
		if err != nil {
			pool.Close()
			drop()
			return nil, nil, err
		}
		return st, func() { pool.Close(); drop() }, nil
	}
	return nil, nil, fmt.Errorf("store %q: want sqlite or postgres", cfg.Store)
}
