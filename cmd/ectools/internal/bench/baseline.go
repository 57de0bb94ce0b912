package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/rawlifecycle"
	"github.com/eventcenter/eventcenter/store/sqlite"
)

// Throughput is a baseline's result.
type Throughput struct {
	Messages  int     `json:"messages"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_second"`
	Writers   int     `json:"writers,omitempty"`
	What      string  `json:"what"`
	// ClientUsPerCall is the CPU the check-back baseline's client spent
	// per call: its goroutines' share of a CPU profile of the baseline
	// (the server's goroutines and the Go runtime's own excluded) times
	// the process's CPU time, divided by the calls.
	ClientUsPerCall float64 `json:"client_us_per_call,omitempty"`
}

func throughput(n int, d time.Duration, what string) *Throughput {
	return &Throughput{Messages: n, Seconds: d.Seconds(), PerSecond: float64(n) / d.Seconds(), What: what}
}

// transportBaseline produces n records of the run's payload to a fresh
// topic on the same broker and consumes them, no center: records/s from
// the first produce to the last record consumed.
func transportBaseline(ctx context.Context, brokers []string, topic string, partitions, n, payloadSize int) (*Throughput, error) {
	if err := createTopics(ctx, brokers, partitions, time.Hour, topic); err != nil {
		return nil, err
	}
	defer deleteTopics(context.WithoutCancel(ctx), brokers, topic)
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(100000))
	if err != nil {
		return nil, fmt.Errorf("transport baseline: producer: %w", err)
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("transport baseline: consumer: %w", err)
	}
	defer cons.Close()

	payload := make([]byte, payloadSize)
	var failed atomic.Value
	start := time.Now()
	go func() {
		for i := range n {
			key := strconv.AppendInt([]byte("bench:k-"), int64(i), 10)
			prod.Produce(ctx, &kgo.Record{Key: key, Value: payload}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, err)
				}
			})
		}
	}()
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err, _ := failed.Load().(error); err != nil {
			return nil, fmt.Errorf("transport baseline: produce: %w", err)
		}
		fs.EachError(func(_ string, _ int32, err error) {
			failed.CompareAndSwap(nil, err)
		})
		got += fs.NumRecords()
	}
	return throughput(n, time.Since(start), "produce + consume, same broker, no center"), nil
}

// storeBaseline writes n messages' lifecycle (insert prepared, update
// committed, update sent) in batches of batchSize straight to the database,
// no center, with writers concurrent writers.
func storeBaseline(ctx context.Context, cfg Config, runID string, n, writers int) (_ *Throughput, err error) {
	var lifecycle func(ctx context.Context, round int) error
	var what string
	if cfg.Store == "sharded" { // one shard's ceiling: the first server
		one := cfg
		one.Store = "postgres"
		one.DSN, _, _ = strings.Cut(cfg.DSN, ",")
		return storeBaseline(ctx, one, runID, n, writers)
	}
	switch cfg.Store {
	case "postgres":
		dsn, drop, err := freshSchema(ctx, cfg.DSN, "ecbench_"+runID+"_raw")
		if err != nil {
			return nil, fmt.Errorf("store baseline: %w", err)
		}
		defer drop()
		pcfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("store baseline: %w", err)
		}
		postgres.ConfigurePool(pcfg) // as the center's pool
		pool, err := pgxpool.NewWithConfig(ctx, pcfg)
		if err != nil {
			return nil, fmt.Errorf("store baseline: connect: %w", err)
		}
		defer pool.Close()
		if err := postgres.Migrate(ctx, pool); err != nil {
			return nil, fmt.Errorf("store baseline: migrate: %w", err)
		}
		lifecycle = batchedLifecycle(rawlifecycle.Postgres(pool, make([]byte, cfg.Payload)), runID)
		what = "insert + update + update via unnest, 1,000 per statement and transaction"
	case "sqlite":
		path := filepath.Join(cfg.tempDir, "baseline.db")
		st, err := sqlite.Open(ctx, path, sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return nil, fmt.Errorf("store baseline: create schema: %w", err)
		}
		_ = st.Close()
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
		if err != nil {
			return nil, fmt.Errorf("store baseline: open: %w", err)
		}
		defer db.Close()
		lifecycle = batchedLifecycle(rawlifecycle.SQLite(db, make([]byte, cfg.Payload)), runID)
		what = "insert + update + update as multi-row statements, 1,000 per transaction"
	case "mysql":
		var cleanup func()
		if lifecycle, cleanup, err = mysqlBaseline(ctx, cfg, runID, writers); err != nil {
			return nil, fmt.Errorf("store baseline: %w", err)
		}
		defer cleanup()
		what = "multi-row insert + update by key + update by key, 1,000 per statement, autocommit"
	}
	rounds := (n + batchSize - 1) / batchSize
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	start := time.Now()
	for range writers {
		wg.Go(func() {
			for {
				r := int(next.Add(1) - 1)
				if r >= rounds || ctx.Err() != nil {
					return
				}
				if err := lifecycle(ctx, r); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("store baseline: %w", err)
	}
	t := throughput(rounds*batchSize, time.Since(start), what)
	t.Writers = writers
	return t, nil
}

const batchSize = 1000

func baselineKey(runID string, round, i int) string {
	return fmt.Sprintf("raw-%s-%08d-%05d", runID, round, i)
}

// batchedLifecycle adapts a raw lifecycle writer to rounds of batchSize keys.
func batchedLifecycle(write rawlifecycle.Writer, runID string) func(context.Context, int) error {
	return func(ctx context.Context, round int) error {
		keys := make([]string, batchSize)
		for i := range keys {
			keys[i] = baselineKey(runID, round, i)
		}
		return write(ctx, keys)
	}
}

// checkbackBaseline makes n plain HTTP check-back calls (the http
// protocol's GET, as the center sends it) to the bench's check-back server
// at url, conc at a time, from a client with the center's transport
// settings (per-host connections bounded by conc, keep-alive), no center
// and no store: calls/s from the first call to the last answer read.
// profiledCheckbackBaseline runs checkbackBaseline with its client's
// goroutines labelled "client" under a CPU profile of its own, and sets
// the client's CPU per call. The server's goroutines carry "load" (they
// were started under it), so they are not counted. When another profile
// runs, the throughput is measured without the CPU.
func profiledCheckbackBaseline(ctx context.Context, cfg Config, rawURL string, n int) (*Throughput, error) {
	var prof partProfiler
	perr := prof.start(nil)
	defer prof.abort()
	t0, _ := procTicks("self")
	var t *Throughput
	var err error
	pprof.Do(ctx, pprof.Labels(profilePart, "client"), func(ctx context.Context) {
		t, err = checkbackBaseline(ctx, rawURL, n, cfg.CheckbackConcurrency)
	})
	if err != nil {
		return nil, err
	}
	t1, _ := procTicks("self")
	if perr != nil {
		cfg.Logger.Warn("check-back baseline: client CPU not measured", "err", perr)
		return t, nil
	}
	parts, perr := prof.stop(float64(t1-t0)/clockTicks, 0, 0)
	if perr != nil || parts == nil {
		cfg.Logger.Warn("check-back baseline: client CPU not measured", "err", perr)
		return t, nil
	}
	t.ClientUsPerCall = parts.Share["client"] * float64(t1-t0) / clockTicks * 1e6 / float64(n)
	return t, nil
}

func checkbackBaseline(ctx context.Context, rawURL string, n, conc int) (*Throughput, error) {
	ep, err := checkback.ParseEndpoint(rawURL)
	if err != nil {
		return nil, fmt.Errorf("check-back baseline: %w", err)
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: conc,
		MaxConnsPerHost:     conc,
		IdleConnTimeout:     90 * time.Second,
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				r := ep.Request(checkback.Question{BizID: bizID, MessageKey: "baseline-" + strconv.FormatInt(i, 10), Attempt: 1, Timeout: 5 * time.Second})
				req, err := http.NewRequestWithContext(ctx, r.Method, r.URL.String(), nil)
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				req.Header = r.Header
				resp, err := hc.Do(req)
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					failed.CompareAndSwap(nil, fmt.Errorf("status %d, read: %v", resp.StatusCode, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err, _ := failed.Load().(error); err != nil {
		return nil, fmt.Errorf("check-back baseline: %w", err)
	}
	t := throughput(n, d, fmt.Sprintf("plain HTTP GETs to the bench's check-back server, %d at a time, keep-alive, no center", conc))
	t.Writers = conc
	return t, nil
}
