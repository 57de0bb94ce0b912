package storemetrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/store"
)

// fairGauges are the per-bizID send backlog gauges (docs/fairness.md), read from a
// store.Backlogger.
type fairGauges struct {
	backlog   *prometheus.GaugeVec
	due       *prometheus.GaugeVec
	oldestDue *prometheus.GaugeVec
}

func newFairGauges() fairGauges {
	return fairGauges{
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventcenter_forward_biz_backlog",
			Help: "Committed messages not sent yet per bizID: due, being sent, scheduled or waiting for a retry.",
		}, []string{"biz_id"}),
		due: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventcenter_forward_biz_due",
			Help: "Committed messages due and not claimed per bizID: waiting for their turn (fair claims) or held by a forward.biz limit.",
		}, []string{"biz_id"}),
		oldestDue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventcenter_forward_biz_oldest_due_age_seconds",
			Help: "How long the oldest due, unclaimed message of a bizID has waited since it fell due (0: none).",
		}, []string{"biz_id"}),
	}
}

func (g fairGauges) collectors() []prometheus.Collector {
	return []prometheus.Collector{g.backlog, g.due, g.oldestDue}
}

// refreshFair sets the backlog gauges from a store.Backlogger; other stores
// leave them empty.
func (c *Collector) refreshFair(ctx context.Context, now time.Time) error {
	bl, ok := c.st.(store.Backlogger)
	if !ok {
		return nil
	}
	bs, err := bl.SendBacklog(ctx)
	if err != nil {
		return err
	}
	pending, due := map[string]float64{}, map[string]float64{}
	oldest := map[string]time.Time{}
	for biz := range c.known {
		pending[biz], due[biz] = 0, 0
	}
	for _, b := range bs {
		l := c.label(b.BizID)
		pending[l] += float64(b.Pending)
		due[l] += float64(b.Due)
		if !b.OldestDue.IsZero() {
			if t, ok := oldest[b.BizID]; !ok || b.OldestDue.Before(t) {
				oldest[b.BizID] = b.OldestDue
			}
		}
	}
	c.fair.backlog.Reset()
	c.fair.due.Reset()
	for l, v := range pending {
		c.fair.backlog.WithLabelValues(l).Set(v)
		c.fair.due.WithLabelValues(l).Set(due[l])
	}
	c.fair.oldestDue.Reset()
	for l, age := range c.ages(oldest, now) {
		c.fair.oldestDue.WithLabelValues(l).Set(age)
	}
	return nil
}
