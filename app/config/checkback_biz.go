package config

import "math"

// validateBizFairness checks a checkback.biz[] entry's weight and rate
// limit (docs/fairness.md).
func validateBizFairness(field string, b Biz, bad func(string, string, ...any)) {
	if b.Weight < 0 {
		bad(field+".weight", "must not be negative (0 means 1)")
	}
	if b.Rate < 0 || math.IsNaN(b.Rate) || math.IsInf(b.Rate, 0) {
		bad(field+".rate", "must be a number of check-backs per second, 0 for no limit")
	}
	if b.Burst < 0 {
		bad(field+".burst", "must not be negative")
	}
	if b.Burst > 0 && b.Rate == 0 {
		bad(field+".burst", "is set without a rate")
	}
}
