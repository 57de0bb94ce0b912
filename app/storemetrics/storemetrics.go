// Package storemetrics exports gauges read from the store on a timer: messages
// by bizID, status and send status, the age of the oldest PREPARED message per
// bizID, the number of orphan COMMITs (committed without a body) and the age
// of the oldest per bizID, the blocked order keys and the age of the oldest
// per bizID, the send backlog per bizID (pending, due, the oldest due), and
// the DEAD / VERIFY_FAILED / unsent-committed
// totals that alerts watch. bizID labels come only from configuration (others are "other"), so
// label cardinality stays bounded.
package storemetrics

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/internal/startstop"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// Store is what the collector reads.
type Store interface {
	Counts(ctx context.Context) ([]store.Count, error)
	OldestPrepared(ctx context.Context) (map[string]time.Time, error)
	OrphanCommits(ctx context.Context) (map[string]store.OrphanStat, error)
}

// Config configures the collector.
type Config struct {
	Interval time.Duration
	// BizIDs are the bizIDs that get their own label value.
	BizIDs []string
	// Counts, when set, replaces the store's Counts (a CountsCache
	// shared with other readers).
	Counts     func(ctx context.Context) ([]store.Count, error)
	Now        func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Collector refreshes the gauges periodically.
type Collector struct {
	*startstop.Loop
	cfg          Config
	st           Store
	known        map[string]bool
	messages     *prometheus.GaugeVec
	oldest       *prometheus.GaugeVec
	dead         prometheus.Gauge
	verifyFailed prometheus.Gauge
	unsent       prometheus.Gauge
	scheduled    prometheus.Gauge
	orphans      prometheus.Gauge
	oldestOrphan *prometheus.GaugeVec
	blocked      prometheus.Gauge
	oldestBlock  *prometheus.GaugeVec
	fair         fairGauges
}

// blockedLimit bounds the blocked keys one refresh reads: the gauge
// counts at most this many.
const blockedLimit = 1000

// New returns a collector; Start runs it.
func New(cfg Config, st Store) *Collector {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 15 * time.Second
	}
	c := &Collector{
		cfg: cfg, st: st, known: map[string]bool{},
		messages: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventcenter_messages", Help: "Messages in the store by bizID, status and send status.",
		}, []string{"biz_id", "status", "send_status"}),
		oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventcenter_oldest_prepared_age_seconds", Help: "Age of the oldest PREPARED message per bizID.",
		}, []string{"biz_id"}),
		dead: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventcenter_dead_messages", Help: "Committed messages whose forwarding gave up (DEAD).",
		}),
		verifyFailed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventcenter_verify_failed_messages", Help: "Messages parked as VERIFY_FAILED.",
		}),
		unsent: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventcenter_unsent_committed_messages", Help: "Committed messages not yet forwarded (pending) and due: SCHEDULED ones (eventcenter_scheduled_messages) are not counted.",
		}),
		scheduled: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventcenter_scheduled_messages", Help: "SCHEDULED messages: committed, held until a deliver-at still to come (ec-deliver-at, ec-delay).",
		}),
		orphans: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventcenter_orphan_commits", Help: "Orphan COMMITs: committed messages without a body (their PREPARE was dead-lettered or never came), which cannot be forwarded.",
		}),
		oldestOrphan: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventcenter_oldest_orphan_commit_age_seconds", Help: "Age of the oldest orphan COMMIT (committed without a body) per bizID.",
		}, []string{"biz_id"}),
	}
	c.blocked = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "eventcenter_blocked_order_keys",
		Help: "Order keys whose head message is DEAD or failing, holding back the later messages of the key (counted up to 1000).",
	})
	c.oldestBlock = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "eventcenter_oldest_blocked_order_key_age_seconds",
		Help: "Seconds since the head of the oldest blocked order key was committed, per bizID (0: none blocked).",
	}, []string{"biz_id"})
	c.fair = newFairGauges()
	for _, b := range cfg.BizIDs {
		c.known[b] = true
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(c.messages, c.oldest, c.dead, c.verifyFailed, c.unsent, c.scheduled, c.orphans, c.oldestOrphan,
			c.blocked, c.oldestBlock)
		cfg.Registerer.MustRegister(c.fair.collectors()...)
	}
	c.Loop = startstop.NewLoop(cfg.Interval, func(ctx context.Context) {
		if err := c.Refresh(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("refresh store metrics", "err", err)
		}
	})
	return c
}

func (c *Collector) label(bizID string) string {
	if c.known[bizID] {
		return bizID
	}
	return "other"
}

// Refresh reads the store once and sets every gauge.
func (c *Collector) Refresh(ctx context.Context) error {
	read := c.st.Counts
	if c.cfg.Counts != nil {
		read = c.cfg.Counts
	}
	counts, err := read(ctx)
	if err != nil {
		return err
	}
	oldest, err := c.st.OldestPrepared(ctx)
	if err != nil {
		return err
	}
	orphans, err := c.st.OrphanCommits(ctx)
	if err != nil {
		return err
	}
	type key struct{ biz, status, send string }
	sums := map[key]float64{}
	var dead, vf, unsent, scheduled float64
	for _, n := range counts {
		send := "-"
		if n.Status == state.Committed {
			send = n.SendStatus.String()
			switch n.SendStatus {
			case state.SendDead:
				dead += float64(n.N)
			case state.SendPending:
				unsent += float64(n.N - n.Scheduled)
				scheduled += float64(n.Scheduled)
			}
		}
		if n.Status == state.VerifyFailed {
			vf += float64(n.N)
		}
		sums[key{c.label(n.BizID), n.Status.String(), send}] += float64(n.N)
	}
	c.messages.Reset()
	for k, v := range sums {
		c.messages.WithLabelValues(k.biz, k.status, k.send).Set(v)
	}
	now := c.cfg.Now()
	c.oldest.Reset()
	for l, age := range c.ages(oldest, now) {
		c.oldest.WithLabelValues(l).Set(age)
	}
	oldestTimes := make(map[string]time.Time, len(orphans))
	var nOrphans float64
	for biz, o := range orphans {
		oldestTimes[biz] = o.Oldest
		nOrphans += float64(o.N)
	}
	c.oldestOrphan.Reset()
	for l, age := range c.ages(oldestTimes, now) {
		c.oldestOrphan.WithLabelValues(l).Set(age)
	}
	c.orphans.Set(nOrphans)
	if err := c.refreshBlocked(ctx, now); err != nil {
		return err
	}
	if err := c.refreshFair(ctx, now); err != nil {
		return err
	}
	c.dead.Set(dead)
	c.verifyFailed.Set(vf)
	c.unsent.Set(unsent)
	c.scheduled.Set(scheduled)
	return nil
}

// ages returns the age of the oldest time per bizID label: configured bizIDs
// always have one (0 when they have none), so an alert can tell "none" from
// "no data"; other bizIDs share the label "other".
func (c *Collector) ages(oldest map[string]time.Time, now time.Time) map[string]float64 {
	ages := map[string]float64{}
	for biz := range c.known {
		ages[biz] = 0
	}
	for biz, t := range oldest {
		l := c.label(biz)
		if age := now.Sub(t).Seconds(); age > ages[l] {
			ages[l] = age
		}
	}
	return ages
}

// refreshBlocked sets the blocked-key gauges from a store that keeps
// per-key order (store.Orderer); others leave them at 0.
func (c *Collector) refreshBlocked(ctx context.Context, now time.Time) error {
	heads := map[string]time.Time{}
	n := 0
	if o, ok := c.st.(store.Orderer); ok {
		bs, err := o.BlockedKeys(ctx, "", blockedLimit)
		if err != nil && !errors.Is(err, store.ErrOrderUnavailable) {
			return err
		}
		n = len(bs)
		for _, b := range bs {
			if t, ok := heads[b.BizID]; !ok || b.Since.Before(t) {
				heads[b.BizID] = b.Since
			}
		}
	}
	c.blocked.Set(float64(n))
	c.oldestBlock.Reset()
	for l, age := range c.ages(heads, now) {
		c.oldestBlock.WithLabelValues(l).Set(age)
	}
	return nil
}
