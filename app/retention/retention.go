// Package retention purges terminal messages (rolled back, or committed and
// sent) older than the configured period, and audit records older than
// their own (longer) period, in small batches so the database never holds
// long locks, and counts what it removed.
package retention

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/internal/startstop"
)

// Store is what the purger needs.
type Store interface {
	Purge(ctx context.Context, before time.Time, limit int) (int, error)
	PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error)
}

// Defaults: a zero Interval or Batch takes these, and the binary's
// configuration (retention.*) starts from them. DefaultPeriod is the
// binary's; a zero Period here disables purging.
const (
	DefaultPeriod   = 7 * 24 * time.Hour
	DefaultInterval = time.Minute
	DefaultBatch    = 500
)

// Config configures the purger.
type Config struct {
	// Period is how long terminal messages are kept; 0 disables purging.
	Period time.Duration
	// AuditPeriod is how long audit records are kept, whatever became of
	// their message; 0 keeps them forever.
	AuditPeriod time.Duration
	// Interval between purge rounds (default DefaultInterval).
	Interval time.Duration
	// Batch is the number of rows deleted per statement (default
	// DefaultBatch).
	Batch      int
	Now        func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Purger is the background purge.
type Purger struct {
	*startstop.Loop
	cfg         Config
	st          Store
	purged      prometheus.Counter
	auditPurged prometheus.Counter
}

// New returns a purger; it does nothing until Start.
func New(cfg Config, st Store) *Purger {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Batch < 1 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	p := &Purger{cfg: cfg, st: st, purged: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "eventcenter_retention_purged_total",
		Help: "Terminal messages deleted by the retention purge.",
	})}
	p.auditPurged = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "eventcenter_retention_audit_purged_total",
		Help: "Audit records deleted by the retention purge (retention.audit_period).",
	})
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(p.purged, p.auditPurged)
	}
	p.Loop = startstop.NewLoop(cfg.Interval, p.Round)
	return p
}

// Round deletes batches of expired messages until none is left or ctx ends.
// It returns how many it deleted.
func (p *Purger) Round(ctx context.Context) {
	_, _ = p.round(ctx)
	_, _ = p.roundAudit(ctx)
}

// roundAudit deletes batches of audit records older than AuditPeriod.
func (p *Purger) roundAudit(ctx context.Context) (int, error) {
	if p.cfg.AuditPeriod <= 0 {
		return 0, nil
	}
	before := p.cfg.Now().Add(-p.cfg.AuditPeriod)
	total := 0
	for ctx.Err() == nil {
		n, err := p.st.PurgeAudit(ctx, before, p.cfg.Batch)
		total += n
		p.auditPurged.Add(float64(n))
		if err != nil {
			if ctx.Err() == nil {
				p.cfg.Logger.Warn("audit retention purge failed", "err", err)
			}
			return total, err
		}
		if n < p.cfg.Batch {
			break
		}
	}
	if total > 0 {
		p.cfg.Logger.Info("audit retention purge", "deleted", total, "before", before)
	}
	return total, nil
}

func (p *Purger) round(ctx context.Context) (int, error) {
	if p.cfg.Period <= 0 {
		return 0, nil
	}
	before := p.cfg.Now().Add(-p.cfg.Period)
	total := 0
	for ctx.Err() == nil {
		n, err := p.st.Purge(ctx, before, p.cfg.Batch)
		total += n
		p.purged.Add(float64(n))
		if err != nil {
			if ctx.Err() == nil {
				p.cfg.Logger.Warn("retention purge failed", "err", err)
			}
			return total, err
		}
		if n < p.cfg.Batch {
			break
		}
	}
	if total > 0 {
		p.cfg.Logger.Info("retention purge", "deleted", total, "before", before)
	}
	return total, nil
}
