package bizshare

import (
	"math"

	"github.com/eventcenter/eventcenter/internal/fieldcheck"
)

// Share is one bizID's weight and rate limit.
type Share struct {
	// Weight is the bizID's share against the others with work waiting;
	// 0 means 1.
	Weight int
	// Rate is the most operations per second (a token bucket); 0 means no
	// limit.
	Rate float64
	// Burst is the bucket's size: how many may go at once after a quiet
	// spell; 0 means max(1, ⌈Rate⌉), one second's worth.
	Burst int
}

// Check records s's problems under field (the entry, as `Biz["a"]`):
// field.Weight, field.Rate and field.Burst. unit names what Rate counts
// ("messages", "check-backs").
func (s Share) Check(check *fieldcheck.Checker, field, unit string) {
	if s.Weight < 0 {
		check.Bad(field+".Weight", "must not be negative (0 means 1), got %d", s.Weight)
	}
	if s.Rate < 0 || math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0) {
		check.Bad(field+".Rate", "must be a number of %s per second, or 0 for no limit, got %v", unit, s.Rate)
	}
	if s.Burst < 0 {
		check.Bad(field+".Burst", "must not be negative (0 means max(1, ⌈rate⌉)), got %d", s.Burst)
	}
}

// EffectiveWeight is Weight, or 1 for 0.
func (s Share) EffectiveWeight() int { return max(1, s.Weight) }

// EffectiveBurst is Burst, or its default for 0: max(1, ⌈Rate⌉).
func (s Share) EffectiveBurst() int {
	if s.Burst > 0 {
		return s.Burst
	}
	return max(1, int(math.Ceil(s.Rate)))
}
