package bench

import (
	"math"
	"math/bits"
	"time"
)

// hist is a log-linear histogram of durations in microseconds (like HDR
// histograms: 2^subBits sub-buckets per power of two, so a quantile is off
// by less than 1%). Its memory is constant whatever the run's length.
type hist struct {
	counts [64 << subBits]uint64
	n      uint64
	max    int64
	sum    float64
}

const subBits = 7

func bucketOf(us int64) int {
	if us < 1<<subBits {
		return int(us)
	}
	exp := bits.Len64(uint64(us)) - subBits // ≥ 1
	return exp<<subBits + int(uint64(us)>>uint(exp-1)) - 1<<subBits
}

// lowerOf is the smallest value of bucket b (inverse of bucketOf).
func lowerOf(b int) int64 {
	if b < 1<<subBits {
		return int64(b)
	}
	exp := b >> subBits
	sub := b&(1<<subBits-1) + 1<<subBits
	return int64(sub) << uint(exp-1)
}

func (h *hist) add(d time.Duration) {
	us := max(d.Microseconds(), 0)
	h.counts[bucketOf(us)]++
	h.n++
	h.sum += float64(us)
	if us > h.max {
		h.max = us
	}
}

// quantile returns the q-quantile (0 < q ≤ 1) as a duration.
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank && c > 0 {
			// The bucket's midpoint, never above the maximum seen.
			lo, hi := lowerOf(b), lowerOf(b+1)
			return time.Duration(min((lo+hi)/2, h.max)) * time.Microsecond
		}
	}
	return time.Duration(h.max) * time.Microsecond
}

// Latency summarizes a histogram.
type Latency struct {
	Count uint64  `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	AvgMs float64 `json:"avg_ms"`
}

func (h *hist) summary() Latency {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	l := Latency{Count: h.n, P50Ms: ms(h.quantile(.5)), P90Ms: ms(h.quantile(.9)), P99Ms: ms(h.quantile(.99)),
		MaxMs: float64(h.max) / 1000}
	if h.n > 0 {
		l.AvgMs = h.sum / float64(h.n) / 1000
	}
	return l
}
