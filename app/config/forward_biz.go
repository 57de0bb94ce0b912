package config

import (
	"fmt"
	"math"

	"github.com/eventcenter/eventcenter/forwarder"
)

// ForwardBiz is one bizID's share of forwarding (forward.biz[]; docs/fairness.md;
// forwarder.BizLimits). Zero fields take the defaults: weight 1, no rate
// limit, no cap. Over a limit messages wait in the store, due; they are
// never failed or made DEAD by it.
type ForwardBiz struct {
	BizID string `yaml:"biz_id"`
	// Weight is the bizID's share of each fair claim against the other
	// bizIDs with due messages; 0 means 1.
	Weight int `yaml:"weight"`
	// Rate is the most messages per second each center sends for the
	// bizID; 0 means no limit.
	Rate float64 `yaml:"rate"`
	// Burst is how many may go at once after a quiet spell; 0 means
	// max(1, ⌈rate⌉).
	Burst int `yaml:"burst"`
	// MaxInFlight caps the bizID's messages each center holds at once,
	// queued for a target or being sent; the rest wait in the store. 0
	// means no cap.
	MaxInFlight int `yaml:"max_in_flight"`
}

// BizLimits returns forward.biz as the forwarder's per-bizID limits.
func (f Forward) BizLimits() map[string]forwarder.BizLimits {
	if len(f.Biz) == 0 {
		return nil
	}
	out := make(map[string]forwarder.BizLimits, len(f.Biz))
	for _, b := range f.Biz {
		out[b.BizID] = forwarder.BizLimits{Weight: b.Weight, Rate: b.Rate, Burst: b.Burst, MaxInFlight: b.MaxInFlight}
	}
	return out
}

// validateFair checks forward.biz.
func (c *Config) validateFair(bad func(string, string, ...any)) {
	seen := map[string]bool{}
	for i, b := range c.Forward.Biz {
		field := fmt.Sprintf("forward.biz[%d]", i)
		switch {
		case b.BizID == "":
			bad(field+".biz_id", "required")
		case seen[b.BizID]:
			bad(field+".biz_id", "duplicate bizID %q", b.BizID)
		}
		seen[b.BizID] = true
		if b.Weight < 0 {
			bad(field+".weight", "must not be negative (0 means 1)")
		}
		if b.Rate < 0 || math.IsNaN(b.Rate) || math.IsInf(b.Rate, 0) {
			bad(field+".rate", "must be messages per second, or 0 for no limit")
		}
		if b.Burst < 0 {
			bad(field+".burst", "must not be negative (0 means max(1, rate))")
		}
		if b.MaxInFlight < 0 {
			bad(field+".max_in_flight", "must not be negative (0 means no cap)")
		}
	}
}

// MetricBizIDs are the bizIDs with their own biz_id label in metrics: those
// of checkback.biz and forward.biz (the others share "other").
func (c *Config) MetricBizIDs() []string {
	var out []string
	for _, b := range c.Checkback.Biz {
		out = append(out, b.BizID)
	}
	for _, b := range c.Forward.Biz {
		out = append(out, b.BizID)
	}
	return out
}
