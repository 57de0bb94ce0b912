package bench

import (
	"math"
	"math/bits"
	"time"
)

// SecondLatency is the commit-to-forward latency of the messages forwarded
// in one second of the run (from the first send).
type SecondLatency struct {
	Count uint64  `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// coarseBits gives coarseHist 8 sub-buckets per power of two: a quantile
// is off by at most ~6%, plenty for a chart, in 2 KiB per second of run.
const coarseBits = 3

// coarseHist is hist with fewer sub-buckets, one per second of a run.
type coarseHist struct {
	counts [64 << coarseBits]uint32
	n      uint64
	max    int64
}

func coarseBucket(us int64) int {
	if us < 1<<coarseBits {
		return int(us)
	}
	exp := bits.Len64(uint64(us)) - coarseBits
	return exp<<coarseBits + int(uint64(us)>>uint(exp-1)) - 1<<coarseBits
}

func coarseLower(b int) int64 {
	if b < 1<<coarseBits {
		return int64(b)
	}
	exp := b >> coarseBits
	sub := b&(1<<coarseBits-1) + 1<<coarseBits
	return int64(sub) << uint(exp-1)
}

func (h *coarseHist) add(d time.Duration) {
	us := max(d.Microseconds(), 0)
	h.counts[coarseBucket(us)]++
	h.n++
	h.max = max(h.max, us)
}

func (h *coarseHist) quantileMs(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	var seen uint64
	for b, c := range h.counts {
		seen += uint64(c)
		if seen >= rank && c > 0 {
			lo, hi := coarseLower(b), coarseLower(b+1)
			return float64(min((lo+hi)/2, h.max)) / 1000
		}
	}
	return float64(h.max) / 1000
}

// latPerSecond keeps a coarseHist per second since start.
type latPerSecond struct {
	start time.Time
	secs  []*coarseHist
}

func (l *latPerSecond) add(at time.Time, d time.Duration) {
	i := max(int(at.Sub(l.start)/time.Second), 0)
	for len(l.secs) <= i {
		l.secs = append(l.secs, nil)
	}
	if l.secs[i] == nil {
		l.secs[i] = &coarseHist{}
	}
	l.secs[i].add(d)
}

func (l *latPerSecond) summary() []SecondLatency {
	out := make([]SecondLatency, len(l.secs))
	for i, h := range l.secs {
		if h != nil {
			out[i] = SecondLatency{Count: h.n, P50Ms: h.quantileMs(.5), P90Ms: h.quantileMs(.9), P99Ms: h.quantileMs(.99)}
		}
	}
	return out
}
