package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/store"
)

// Headers of a scheduled bench message: its number and its deliver-at
// (Unix ms), read back from the forwarded record.
const (
	schedSeqHeader = "bench-sched-seq"
	schedAtHeader  = "bench-deliver-at"
)

// schedHoldFrom and schedHoldSpan: a held backlog (no due rate) is due
// from an hour after seeding, spread over a day.
const (
	schedHoldFrom = time.Hour
	schedHoldSpan = 24 * time.Hour
)

// schedSeedBatch is the messages per store transaction of the seeding,
// schedSeedWriters the transactions at a time.
const (
	schedSeedBatch   = 1000
	schedSeedWriters = 4
)

// ScheduledResult is what a run with scheduled messages (--scheduled)
// measured.
type ScheduledResult struct {
	// Messages were seeded committed and scheduled before the load.
	Messages int `json:"messages"`
	// DueRate is the rate at which they fell due (0: held, due an hour
	// and more after the run).
	DueRate float64 `json:"due_rate,omitempty"`
	// Seeded says how they were written; SeedSeconds and SeedRate how
	// long that took.
	Seeded      string  `json:"seeded"`
	SeedSeconds float64 `json:"seed_seconds"`
	SeedRate    float64 `json:"seed_rate"`
	// FirstDueSeconds is when the first fell due, from the load's start
	// (due-rate runs); DueSeconds how long they took to fall due.
	FirstDueSeconds float64 `json:"first_due_seconds,omitempty"`
	DueSeconds      float64 `json:"due_seconds,omitempty"`
	// Forwarded counts those read from their topic (of a held backlog:
	// none should be), Duplicates those read twice, Missing those due and
	// not read within the drain timeout, Early those the center produced
	// before their deliver-at.
	Forwarded  int64 `json:"forwarded"`
	Duplicates int64 `json:"duplicates"`
	Missing    int64 `json:"missing"`
	Early      int64 `json:"early"`
	// Lateness is the center's produce (the forwarded record's timestamp,
	// ms) minus deliver-at; LatenessRead the record's read minus
	// deliver-at.
	Lateness     Latency `json:"lateness"`
	LatenessRead Latency `json:"lateness_read"`
	// SendRate is the forwarded messages per second from the first
	// deliver-at to the last produce (due-rate runs): below DueRate when
	// the center fell behind. ProducedPerSecond counts the forwarded
	// messages by the second of their produce, from the first deliver-at.
	SendRate          float64 `json:"send_rate,omitempty"`
	ProducedPerSecond []int64 `json:"produced_per_second,omitempty"`
}

// schedPlan is when scheduled message i is due.
type schedPlan struct {
	n    int
	base time.Time
	step time.Duration
}

func (p schedPlan) at(i int) time.Time {
	return p.base.Add(time.Duration(i) * p.step).Truncate(time.Millisecond)
}

func (p schedPlan) last() time.Time { return p.at(p.n - 1) }

// newSchedPlan plans cfg.Scheduled messages from now: held (due from
// schedHoldFrom, over schedHoldSpan) or, with a due rate, one every
// 1/rate from now + lead.
func newSchedPlan(cfg Config, now time.Time) schedPlan {
	if cfg.ScheduledDueRate <= 0 {
		return schedPlan{n: cfg.Scheduled, base: now.Add(schedHoldFrom), step: schedHoldSpan / time.Duration(max(cfg.Scheduled, 1))}
	}
	return schedPlan{n: cfg.Scheduled, base: now.Add(cfg.scheduledLead()), step: time.Duration(float64(time.Second) / cfg.ScheduledDueRate)}
}

// scheduledLead is Config.ScheduledLead, or when 0 enough time to seed:
// 20 s plus 1 s per 20,000 messages.
func (c *Config) scheduledLead() time.Duration {
	if c.ScheduledLead > 0 {
		return c.ScheduledLead
	}
	return 20*time.Second + time.Duration(c.Scheduled/20000)*time.Second
}

// seedScheduled writes plan's messages into the center's store as
// committed scheduled messages, with what ingest would have written for
// a clientlib Transact of each (Ingester.ChangeOf: the PREPARE, its
// schedule checked and resolved, and the COMMIT, on the control partition
// the producer would have used, applied through the center's store in
// batches), without going through Kafka: a million PREPAREs and COMMITs
// would take kfake gigabytes of memory and this machine minutes. Each
// forwards to topic with its number and deliver-at in headers.
func seedScheduled(ctx context.Context, cfg Config, ctr *center.Center, plan schedPlan, runID, topic, verify string) (time.Duration, error) {
	payload := make([]byte, cfg.Payload)
	batches := (plan.n + schedSeedBatch - 1) / schedSeedBatch
	var (
		next, done atomic.Int64
		wg         sync.WaitGroup
		mu         sync.Mutex
		errs       []error
	)
	start := time.Now()
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				n := done.Load()
				fmt.Fprintf(progress(cfg), "%6.1fs seeding scheduled messages: %d of %d (%.0f/s)\n",
					time.Since(start).Seconds(), n, plan.n, float64(n)/time.Since(start).Seconds())
			}
		}
	}()
	for range schedSeedWriters {
		wg.Go(func() {
			changes := make([]store.Change, 0, 2*schedSeedBatch)
			for {
				b := int(next.Add(1) - 1)
				if b >= batches || ctx.Err() != nil {
					return
				}
				changes = changes[:0]
				now := time.Now()
				for i := b * schedSeedBatch; i < min((b+1)*schedSeedBatch, plan.n); i++ {
					key := runID + "-sched-" + strconv.Itoa(i)
					at := plan.at(i)
					part := envelope.PartitionFor(envelope.Key(bizID, key), cfg.Partitions)
					prep := envelope.Envelope{Type: envelope.Prepare, BizID: bizID, MessageKey: key, Payload: payload,
						ForwardTopic: topic, ForwardKey: key, Verify: verify, DeliverAt: at.UTC(),
						Headers: []envelope.Header{
							{Key: schedSeqHeader, Value: []byte(strconv.Itoa(i))},
							{Key: schedAtHeader, Value: []byte(strconv.FormatInt(at.UnixMilli(), 10))},
						}}
					for _, e := range []envelope.Envelope{prep, {Type: envelope.Commit, BizID: bizID, MessageKey: key}} {
						c, err := ctr.Ingester.ChangeOf(e, part, now, now)
						if err != nil {
							mu.Lock()
							errs = append(errs, fmt.Errorf("scheduled message %d: %w", i, err))
							mu.Unlock()
							return
						}
						changes = append(changes, c)
					}
				}
				res, err := ctr.Store.Apply(ctx, store.ApplyRequest{Changes: changes})
				if err == nil && len(res.Sendable) > 0 {
					err = fmt.Errorf("%d scheduled messages came out due at once", len(res.Sendable))
				}
				if err == nil {
					for _, o := range res.Outcomes {
						if o.Err != nil {
							err = o.Err
							break
						}
					}
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("seed scheduled messages: %w", err))
					mu.Unlock()
					return
				}
				done.Add(int64(len(changes) / 2))
			}
		})
	}
	wg.Wait()
	close(stopProgress)
	<-progressDone
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// schedTracker reads the scheduled messages' topic and measures lateness.
type schedTracker struct {
	n      int
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	seen       []uint64 // bit per message
	forwarded  int64
	duplicates int64
	early      int64
	late       hist
	lateRead   hist
	// from is the first deliver-at (zero: held); perSec counts produces
	// by second from it; lastTs is the latest produce.
	from   time.Time
	perSec []int64
	lastTs time.Time
}

func startSchedTracker(ctx context.Context, brokers []string, topic string, n int, from time.Time) (*schedTracker, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("scheduled topic consumer: %w", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	t := &schedTracker{n: n, cl: cl, cancel: cancel, done: make(chan struct{}), seen: make([]uint64, (n+63)/64), from: from}
	go func() {
		defer close(t.done)
		for {
			fs := cl.PollFetches(cctx)
			if cctx.Err() != nil {
				return
			}
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) { t.record(r, now) })
		}
	}()
	return t, nil
}

func (t *schedTracker) record(r *kgo.Record, now time.Time) {
	seq, atMs := -1, int64(-1)
	for _, h := range r.Headers {
		switch h.Key {
		case schedSeqHeader:
			if v, err := strconv.Atoi(string(h.Value)); err == nil {
				seq = v
			}
		case schedAtHeader:
			if v, err := strconv.ParseInt(string(h.Value), 10, 64); err == nil {
				atMs = v
			}
		}
	}
	if seq < 0 || seq >= t.n || atMs < 0 {
		return
	}
	at := time.UnixMilli(atMs)
	t.mu.Lock()
	defer t.mu.Unlock()
	word, bit := seq/64, uint64(1)<<(seq%64)
	if t.seen[word]&bit != 0 {
		t.duplicates++
		return
	}
	t.seen[word] |= bit
	t.forwarded++
	if r.Timestamp.Before(at) {
		t.early++
	}
	t.late.add(r.Timestamp.Sub(at))
	t.lateRead.add(now.Sub(at))
	if r.Timestamp.After(t.lastTs) {
		t.lastTs = r.Timestamp
	}
	if !t.from.IsZero() {
		if sec := int(r.Timestamp.Sub(t.from) / time.Second); sec >= 0 {
			for len(t.perSec) <= sec {
				t.perSec = append(t.perSec, 0)
			}
			t.perSec[sec]++
		}
	}
}

func (t *schedTracker) count() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.forwarded
}

func (t *schedTracker) stop() {
	t.cancel()
	<-t.done
	t.cl.Close()
}

// wait waits until every message was read or deadline passed.
func (t *schedTracker) wait(ctx context.Context, cfg Config, deadline time.Time) error {
	last := time.Now()
	for t.count() < int64(t.n) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond): // polling the consumer's progress
		}
		if time.Since(last) >= time.Second {
			last = time.Now()
			t.mu.Lock()
			n, p99 := t.forwarded, t.late.quantile(.99)
			t.mu.Unlock()
			fmt.Fprintf(progress(cfg), "scheduled: %d of %d read, lateness p99 %s\n", n, t.n, p99.Round(time.Millisecond))
		}
	}
	return nil
}

// result fills r with what was read; due tells whether every message was
// due (a due-rate run), so that those not read are missing.
func (t *schedTracker) result(r *ScheduledResult, due bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r.Forwarded, r.Duplicates, r.Early = t.forwarded, t.duplicates, t.early
	if due {
		r.Missing = int64(t.n) - t.forwarded
	}
	r.Lateness, r.LatenessRead = t.late.summary(), t.lateRead.summary()
	if due && t.lastTs.After(t.from) {
		r.SendRate = float64(t.forwarded) / t.lastTs.Sub(t.from).Seconds()
		r.ProducedPerSecond = t.perSec
	}
}

// seededBacklog is a run's scheduled messages once written.
type seededBacklog struct {
	plan schedPlan
	res  ScheduledResult
}

// seedBacklog plans and seeds cfg.Scheduled messages into ctr's store
// (seedScheduled), then, on PostgreSQL (dsn set), settles the table as a
// backlog that built up over time would be: VACUUM (ANALYZE), what
// autovacuum does after that many inserts (the bench's PostgreSQL may run
// with autovacuum off), which also sets the hint bits the first full scan
// would otherwise write during the run; then CHECKPOINT, so the
// seeding's WAL is not flushed during the run (best effort: it needs the
// pg_checkpoint role).
func seedBacklog(ctx context.Context, cfg Config, ctr *center.Center, runID, topic, verify, dsn string) (*seededBacklog, error) {
	plan := newSchedPlan(cfg, time.Now())
	what := fmt.Sprintf("held: due from %s after seeding, over %s", schedHoldFrom, schedHoldSpan)
	if cfg.ScheduledDueRate > 0 {
		what = fmt.Sprintf("falling due at %.0f/s from %s after seeding began, over %.1fs", cfg.ScheduledDueRate,
			cfg.scheduledLead(), plan.last().Sub(plan.base).Seconds())
	}
	fmt.Fprintf(progress(cfg), "seeding %d scheduled messages (%s) into the center's store\n", plan.n, what)
	took, err := seedScheduled(ctx, cfg, ctr, plan, runID, topic, verify)
	if err != nil {
		return nil, err
	}
	b := &seededBacklog{plan: plan, res: ScheduledResult{Messages: plan.n, DueRate: cfg.ScheduledDueRate,
		Seeded: fmt.Sprintf("%s; written by the center's ingest conversion (Ingester.ChangeOf: PREPARE with ec-deliver-at, then COMMIT) and store (Apply, %d messages per transaction, %d at a time), not through Kafka",
			what, schedSeedBatch, schedSeedWriters),
		SeedSeconds: took.Seconds(), SeedRate: float64(plan.n) / took.Seconds()}}
	if cfg.ScheduledDueRate > 0 {
		b.res.DueSeconds = plan.last().Sub(plan.base).Seconds()
		if time.Now().After(plan.base) {
			return nil, fmt.Errorf("seeding took %s, longer than the lead of %s before the first scheduled message falls due: raise --scheduled-lead",
				took.Round(time.Millisecond), cfg.scheduledLead())
		}
	}
	if dsn != "" {
		actx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		if err := pgExec(actx, dsn, "VACUUM (ANALYZE) eventcenter_messages"); err != nil {
			return nil, fmt.Errorf("vacuum after seeding: %w", err)
		}
		b.res.Seeded += "; VACUUM (ANALYZE) after seeding"
		if err := pgExec(actx, dsn, "CHECKPOINT"); err != nil {
			cfg.Logger.Warn("CHECKPOINT after seeding failed: the seeding's WAL may be flushed during the run", "err", err)
		} else {
			b.res.Seeded += ", then CHECKPOINT"
		}
	}
	fmt.Fprintf(progress(cfg), "seeded %d scheduled messages in %.1fs (%.0f/s)\n", plan.n, took.Seconds(), b.res.SeedRate)
	return b, nil
}
