package bench

import (
	"sync"
	"time"
)

// perSecond counts events per whole second since a start, for the
// forwarded rate while a backlog exists.
type perSecond struct {
	mu     sync.Mutex
	start  time.Time
	counts []int64
}

func (p *perSecond) add(at time.Time) {
	i := int(at.Sub(p.start) / time.Second)
	if i < 0 {
		i = 0
	}
	p.mu.Lock()
	for len(p.counts) <= i {
		p.counts = append(p.counts, 0)
	}
	p.counts[i]++
	p.mu.Unlock()
}

func (p *perSecond) snapshot() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int64(nil), p.counts...)
}

// SlowestSecond is the whole second with the fewest forwarded messages
// among those that began and ended with a backlog (messages sent but not
// yet forwarded): how far the forwarding falls behind while it has work.
type SlowestSecond struct {
	// At is the second's start, in seconds from the first send.
	At        int   `json:"at_s"`
	Forwarded int64 `json:"forwarded"`
	// Sent is how many messages the producers sent in that second (their
	// clock started: commit, or prepare for check-back ones).
	Sent int64 `json:"sent"`
	// Backlog is the backlog at the second's start.
	Backlog int64 `json:"backlog_at_start"`
	// SecondsBelowHalf counts the whole seconds with a backlog in which
	// fewer messages were forwarded than half the mean send rate.
	SecondsBelowHalf int `json:"seconds_below_half_send_rate"`
}

// slowestSecond finds it from per-second counts of sent (expected) and
// forwarded messages; ok is false when no second had a backlog throughout.
func slowestSecond(sent, fwd []int64, sendRate float64) (SlowestSecond, bool) {
	n := max(len(sent), len(fwd))
	at := func(s []int64, i int) int64 {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	var best SlowestSecond
	found := false
	var cumSent, cumFwd int64
	for i := range n {
		start := cumSent - cumFwd
		cumSent += at(sent, i)
		cumFwd += at(fwd, i)
		end := cumSent - cumFwd
		if start <= 0 || end <= 0 {
			continue
		}
		f := at(fwd, i)
		if float64(f) < sendRate/2 {
			best.SecondsBelowHalf++
		}
		if !found || f < best.Forwarded {
			best.At, best.Forwarded, best.Sent, best.Backlog = i, f, at(sent, i), start
			found = true
		}
	}
	return best, found
}
