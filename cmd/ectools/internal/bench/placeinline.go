package bench

import (
	"math"
	"slices"
	"sync"
	"time"
)

// The place-in-line measure of the noisy-neighbour run: for each of the
// quiet bizID's messages, how many of the flood's messages the center
// forwarded between the quiet message's commit and its own forward.
// Fair claims aim to keep it within one claim (forwarder.DefaultClaimLimit
// messages) of what waits in the store; a message sent inline never waits
// there, and its place is then about the flood's forward rate times its
// own commit-to-forward time, which CPU contention moves
// (docs/performance.md "Fair share between bizIDs: forwarding and lanes";
// the store's own line is measured by the order of sends in
// forwarder's BenchmarkNoisyNeighbourBacklog).
//
// "Forwarded" is the center's produce call: the forwarded record's
// timestamp, which the center's Kafka client stamps when the forwarder
// hands it the record, read back by the bench's consumer. Kafka keeps it
// to the millisecond, so a message's interval runs from its commit's
// millisecond to its forward's, both included: an upper bound, by at most
// the flood's messages of two milliseconds.

// forwardLog keeps the forward timestamps (Unix milliseconds) of a load's
// records.
type forwardLog struct {
	mu sync.Mutex
	ms []int64
}

func (l *forwardLog) add(produced time.Time) {
	l.mu.Lock()
	l.ms = append(l.ms, produced.UnixMilli())
	l.mu.Unlock()
}

// sorted returns the timestamps in order.
func (l *forwardLog) sorted() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.ms)
	slices.Sort(s)
	return s
}

// placeSample is one message's commit (the start of its clock) and
// forward (its record's timestamp).
type placeSample struct {
	commit   time.Time
	produced time.Time
}

// placeLog keeps the place samples of a load's messages.
type placeLog struct {
	mu sync.Mutex
	s  []placeSample
}

func (l *placeLog) add(commit, produced time.Time) {
	l.mu.Lock()
	l.s = append(l.s, placeSample{commit: commit, produced: produced})
	l.mu.Unlock()
}

func (l *placeLog) samples() []placeSample {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.s)
}

// PlaceInLine summarizes places in line: counts of messages forwarded
// ahead of a message between its commit and its forward.
type PlaceInLine struct {
	// Count is the number of messages measured.
	Count int     `json:"count"`
	P50   int     `json:"p50"`
	P90   int     `json:"p90"`
	P99   int     `json:"p99"`
	Max   int     `json:"max"`
	Avg   float64 `json:"avg"`
}

// placesInLine counts, for each sample, the timestamps of ahead (sorted,
// Unix ms) from its commit's millisecond to its forward's, both included.
// With self, ahead holds the samples' own forwards, and each sample's own
// is not counted.
func placesInLine(samples []placeSample, ahead []int64, self bool) PlaceInLine {
	counts := make([]int, 0, len(samples))
	for _, s := range samples {
		from, to := s.commit.UnixMilli(), s.produced.UnixMilli()
		if to < from {
			counts = append(counts, 0) // a clock step back
			continue
		}
		lo, _ := slices.BinarySearch(ahead, from)
		hi, _ := slices.BinarySearch(ahead, to+1)
		n := hi - lo
		if self && n > 0 {
			n--
		}
		counts = append(counts, n)
	}
	return summarizePlaces(counts)
}

// summarizePlaces returns the nearest-rank quantiles of counts.
func summarizePlaces(counts []int) PlaceInLine {
	p := PlaceInLine{Count: len(counts)}
	if len(counts) == 0 {
		return p
	}
	slices.Sort(counts)
	q := func(f float64) int {
		i := int(math.Ceil(f*float64(len(counts)))) - 1
		return counts[min(max(i, 0), len(counts)-1)]
	}
	sum := 0
	for _, c := range counts {
		sum += c
	}
	p.P50, p.P90, p.P99, p.Max = q(.5), q(.9), q(.99), counts[len(counts)-1]
	p.Avg = float64(sum) / float64(len(counts))
	return p
}
