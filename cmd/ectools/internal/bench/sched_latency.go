package bench

import (
	"math"
	"runtime/metrics"
)

// schedLatency reads the Go runtime's histogram of how long goroutines
// waited runnable before they ran (/sched/latencies:seconds): on a
// machine whose cores are all busy, every hand-off between goroutines on
// a message's path (producer, broker, consumer, ingest, database driver,
// forwarder, target producer) pays it.
const schedLatencyMetric = "/sched/latencies:seconds"

func readSchedLatency() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: schedLatencyMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	h := s[0].Value.Float64Histogram()
	return &metrics.Float64Histogram{Counts: append([]uint64(nil), h.Counts...), Buckets: h.Buckets}
}

// SchedLatency is the goroutines' wait for a CPU over one load.
type SchedLatency struct {
	Count uint64  `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// P999Ms is the 99.9th percentile.
	P999Ms float64 `json:"p999_ms"`
}

// schedLatencySince is the histogram's change since from, summarised
// (each quantile is its bucket's upper bound; nil when unavailable).
func schedLatencySince(from *metrics.Float64Histogram) *SchedLatency {
	to := readSchedLatency()
	if from == nil || to == nil || len(from.Counts) != len(to.Counts) {
		return nil
	}
	d := make([]uint64, len(to.Counts))
	var n uint64
	for i := range d {
		d[i] = to.Counts[i] - from.Counts[i]
		n += d[i]
	}
	if n == 0 {
		return &SchedLatency{}
	}
	q := func(f float64) float64 {
		want := uint64(math.Ceil(f * float64(n)))
		var c uint64
		for i, k := range d {
			c += k
			if c >= want {
				ub := to.Buckets[i+1]
				if math.IsInf(ub, 1) {
					ub = to.Buckets[i]
				}
				return ub * 1000
			}
		}
		return 0
	}
	return &SchedLatency{Count: n, P50Ms: q(0.5), P99Ms: q(0.99), P999Ms: q(0.999)}
}
