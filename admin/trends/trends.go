package trends

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/eventcenter/eventcenter/internal/startstop"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// Store is what the sampler reads: one query per sample.
type Store interface {
	Counts(ctx context.Context) ([]store.Count, error)
}

// Config configures a Sampler.
type Config struct {
	// Interval is the time between samples (default 5s).
	Interval time.Duration
	// Window is how far back samples and outcomes are kept (default 1h).
	Window time.Duration
	// Now is the clock (nil → time.Now).
	Now func() time.Time
	// Logger (nil → slog.Default()).
	Logger *slog.Logger
}

// Value is one bizID's (or the total's) state at a sample.
type Value struct {
	// Forwarded is the messages forwarded per second by this instance
	// since the previous sample.
	Forwarded float64
	// Backlog is the committed messages not yet sent (pending).
	Backlog int64
	// OldestUnsent is the age of the oldest of them (0 without backlog).
	OldestUnsent time.Duration
}

// Sample is the state at one time.
type Sample struct {
	At      time.Time
	ByBizID map[string]Value
	Total   Value
}

// Outcome names of the check-back counts.
const (
	Commit   = "commit"
	Rollback = "rollback"
	Unknown  = "unknown"
	Failed   = "failed"
)

// MaxEndpoints bounds the endpoints counted apart in one minute; the
// outcomes of further ones are counted as OtherEndpoints (endpoints come
// from envelopes: their number is not bounded by configuration).
const MaxEndpoints = 50

// OtherEndpoints is the name the endpoints past MaxEndpoints are counted
// under.
const OtherEndpoints = "(other endpoints)"

// Outcomes are the check-back outcomes of one endpoint over the window.
type Outcomes struct {
	Endpoint                          string
	Commit, Rollback, Unknown, Failed int64
}

// Total is the sum of the outcomes.
func (o Outcomes) Total() int64 { return o.Commit + o.Rollback + o.Unknown + o.Failed }

type minute struct {
	at  int64 // Unix minute
	eps map[string]*Outcomes
}

// Sampler samples the store periodically; Start runs it. Its methods are
// safe for concurrent use.
type Sampler struct {
	*startstop.Loop
	cfg Config
	st  Store

	mu   sync.Mutex
	ring []Sample // oldest first, at most cap samples
	cap  int
	// fwd counts the messages forwarded since the previous sample, per
	// bizID; each sample empties it, so it holds only the bizIDs of one
	// interval, never every bizID ever seen.
	fwd     map[string]int64
	lastAt  time.Time
	minutes []minute // oldest first
}

// New returns a sampler of st; Start runs it.
func New(cfg Config, st Store) *Sampler {
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Window <= 0 {
		cfg.Window = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Sampler{cfg: cfg, st: st, cap: int(cfg.Window/cfg.Interval) + 1, fwd: map[string]int64{}}
	s.Loop = startstop.NewLoop(cfg.Interval, func(ctx context.Context) {
		if err := s.Sample(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("sample trends", "err", err)
		}
	})
	return s
}

// Window is how far back the sampler keeps samples.
func (s *Sampler) Window() time.Duration { return s.cfg.Window }

// Sample reads the store once and records a sample.
func (s *Sampler) Sample(ctx context.Context) error {
	cs, err := s.st.Counts(ctx)
	if err != nil {
		return fmt.Errorf("trends: read counts: %w", err)
	}
	now := s.cfg.Now()
	smp := Sample{At: now, ByBizID: map[string]Value{}}
	var oldest time.Time
	for _, c := range cs {
		v := smp.ByBizID[c.BizID]
		if c.Status == state.Committed && c.SendStatus == state.SendPending && c.N > 0 {
			v.Backlog += c.N
			smp.Total.Backlog += c.N
			if !c.Oldest.IsZero() {
				v.OldestUnsent = max(v.OldestUnsent, now.Sub(c.Oldest))
				if oldest.IsZero() || c.Oldest.Before(oldest) {
					oldest = c.Oldest
				}
			}
		}
		smp.ByBizID[c.BizID] = v
	}
	if !oldest.IsZero() {
		smp.Total.OldestUnsent = max(now.Sub(oldest), 0)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.lastAt.IsZero() {
		if secs := now.Sub(s.lastAt).Seconds(); secs > 0 {
			var total int64
			for b, d := range s.fwd {
				total += d
				v := smp.ByBizID[b]
				v.Forwarded = float64(d) / secs
				smp.ByBizID[b] = v
			}
			smp.Total.Forwarded = float64(total) / secs
		}
	}
	fold(smp.ByBizID)
	s.lastAt = now
	// A new map, not clear: a cleared map keeps the buckets of its
	// largest size.
	s.fwd = map[string]int64{}
	s.record(smp)
	return nil
}

// MaxBizIDs bounds the bizIDs a sample keeps apart (the ring holds an
// hour of samples: its memory must not grow with the number of bizIDs);
// the rest, those with the least backlog and forwarding, are added up as
// OtherBizIDs.
const MaxBizIDs = 50

// OtherBizIDs is the name the bizIDs past MaxBizIDs are added up under.
const OtherBizIDs = "(other bizIDs)"

// fold keeps the MaxBizIDs busiest bizIDs of by and adds the rest up.
func fold(by map[string]Value) {
	if len(by) <= MaxBizIDs {
		return
	}
	names := make([]string, 0, len(by))
	for b := range by {
		names = append(names, b)
	}
	slices.SortFunc(names, func(a, b string) int {
		va, vb := by[a], by[b]
		switch {
		case va.Backlog != vb.Backlog:
			return cmp.Compare(vb.Backlog, va.Backlog)
		case va.Forwarded != vb.Forwarded:
			return cmp.Compare(vb.Forwarded, va.Forwarded)
		}
		return cmp.Compare(a, b)
	})
	var other Value
	for _, b := range names[MaxBizIDs-1:] {
		v := by[b]
		other.Backlog += v.Backlog
		other.Forwarded += v.Forwarded
		other.OldestUnsent = max(other.OldestUnsent, v.OldestUnsent)
		delete(by, b)
	}
	by[OtherBizIDs] = other
}

// Record adds a sample as if taken (tests and demos seed the charts with
// it); samples out of the window are dropped.
func (s *Sampler) Record(smp Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(smp)
}

func (s *Sampler) record(smp Sample) {
	s.ring = append(s.ring, smp)
	if len(s.ring) > s.cap {
		s.ring = slices.Delete(s.ring, 0, len(s.ring)-s.cap)
	}
}

// Samples returns the samples of the window, oldest first.
func (s *Sampler) Samples() []Sample {
	since := s.cfg.Now().Add(-s.cfg.Window)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Sample, 0, len(s.ring))
	for _, smp := range s.ring {
		if !smp.At.Before(since) {
			out = append(out, smp)
		}
	}
	return out
}

// Forwarded counts n messages of bizID forwarded (the forwarder's OnSent
// hook).
func (s *Sampler) Forwarded(bizID string, n int) {
	s.mu.Lock()
	s.fwd[bizID] += int64(n)
	s.mu.Unlock()
}

// Checkback counts one check-back outcome of an endpoint (the verifier's
// OnOutcome hook): Commit, Rollback, Unknown or Failed; others are
// ignored.
func (s *Sampler) Checkback(endpoint, outcome string) {
	s.RecordOutcome(s.cfg.Now(), endpoint, outcome)
}

// RecordOutcome counts one check-back outcome at a given time.
func (s *Sampler) RecordOutcome(at time.Time, endpoint, outcome string) {
	m := at.Unix() / 60
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.minutes) - 1
	if i < 0 || s.minutes[i].at != m {
		s.minutes = append(s.minutes, minute{at: m, eps: map[string]*Outcomes{}})
		keep := int64(s.cfg.Window/time.Minute) + 1
		for len(s.minutes) > 0 && s.minutes[0].at <= m-keep {
			s.minutes = s.minutes[1:]
		}
		i = len(s.minutes) - 1
	}
	o := s.minutes[i].eps[endpoint]
	if o == nil && len(s.minutes[i].eps) >= MaxEndpoints {
		endpoint = OtherEndpoints
		o = s.minutes[i].eps[endpoint]
	}
	if o == nil {
		o = &Outcomes{Endpoint: endpoint}
		s.minutes[i].eps[endpoint] = o
	}
	switch outcome {
	case Commit:
		o.Commit++
	case Rollback:
		o.Rollback++
	case Unknown:
		o.Unknown++
	case Failed:
		o.Failed++
	}
}

// Outcomes returns the check-back outcomes per endpoint over the window
// (counted per whole minute), sorted by endpoint.
func (s *Sampler) Outcomes() []Outcomes {
	since := s.cfg.Now().Add(-s.cfg.Window).Unix() / 60
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := map[string]*Outcomes{}
	for _, m := range s.minutes {
		if m.at < since {
			continue
		}
		for ep, o := range m.eps {
			t := sum[ep]
			if t == nil {
				t = &Outcomes{Endpoint: ep}
				sum[ep] = t
			}
			t.Commit += o.Commit
			t.Rollback += o.Rollback
			t.Unknown += o.Unknown
			t.Failed += o.Failed
		}
	}
	out := make([]Outcomes, 0, len(sum))
	for _, o := range sum {
		if o.Total() > 0 {
			out = append(out, *o)
		}
	}
	slices.SortFunc(out, func(a, b Outcomes) int {
		switch {
		case a.Endpoint < b.Endpoint:
			return -1
		case a.Endpoint > b.Endpoint:
			return 1
		}
		return 0
	})
	return out
}
