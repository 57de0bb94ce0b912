package config

import (
	"fmt"

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

// validateFair checks what only the list of forward.biz[] entries has:
// each bizID once (the forwarder checks each entry's values,
// validateForward).
func (c *Config) validateFair(bad func(string, string, ...any)) {
	seen := map[string]bool{}
	for i, b := range c.Forward.Biz {
		if seen[b.BizID] {
			bad(fmt.Sprintf("forward.biz[%d].biz_id", i), "duplicate bizID %q", b.BizID)
		}
		seen[b.BizID] = true
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
