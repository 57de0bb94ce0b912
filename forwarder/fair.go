package forwarder

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/eventcenter/eventcenter/internal/bizshare"
	"github.com/eventcenter/eventcenter/internal/fieldcheck"
	"github.com/eventcenter/eventcenter/store"
)

// BizLimits are one bizID's share of the forwarder (forward.biz[] in the
// binary's configuration; docs/fairness.md). Zero fields take the defaults: weight
// 1, no rate limit, no cap.
//
// Over a limit a message waits: it is not sent inline, not queued and not
// claimed; it stays pending in the store, due, and goes when the limit
// allows. A limit never fails a message, never counts a send attempt,
// never makes a message DEAD.
type BizLimits struct {
	// Weight is the bizID's share of each claim against the other bizIDs
	// with due messages (store.Fair): weight 2 gets twice the rows of
	// weight 1 while both have a backlog. 0 means 1.
	Weight int
	// Rate is the most messages per second this forwarder sends for the
	// bizID (a token bucket, golang.org/x/time/rate); 0 means no limit.
	// Each center limits on its own: N centers send up to N × Rate.
	Rate float64
	// Burst is the bucket's size: how many may go at once after a quiet
	// spell. 0 means max(1, ⌈Rate⌉) (one second's worth).
	Burst int
	// MaxInFlight caps the bizID's messages this forwarder holds at once:
	// queued for a target or being sent (claimed, handed over or sent
	// inline). The rest wait in the store, due. It keeps a flooding bizID
	// from filling the targets' queues, so the others' messages find room.
	// 0 means no cap.
	MaxInFlight int
}

// Names of the limits, the limit label of
// eventcenter_forward_biz_throttled_total.
const (
	LimitRate        = "rate"
	LimitMaxInFlight = "max_in_flight"
)

// ThrottleRescan is how soon the scan claims again while a limit holds a
// bizID's messages back, so they go as the limit allows rather than at the
// next scan interval.
const ThrottleRescan = 100 * time.Millisecond

// throttledFor is how long a bizID counts as throttled (BizStatus) after
// a limit last held its messages back.
const throttledFor = 5 * time.Second

// check records the entry's problems (bizshare holds the weight, rate and
// burst rules the verifier's bizIDs share).
func (b BizLimits) check(check *fieldcheck.Checker, biz string) {
	field := fmt.Sprintf("Biz[%q]", biz)
	if biz == "" {
		check.Bad(field, "a bizID is required")
		return
	}
	b.share().Check(check, field, "messages")
	if b.MaxInFlight < 0 {
		check.Bad(field+".MaxInFlight", "must not be negative (0 means no cap), got %d", b.MaxInFlight)
	}
}

// share is the entry's weight and rate limit.
func (b BizLimits) share() bizshare.Share {
	return bizshare.Share{Weight: b.Weight, Rate: b.Rate, Burst: b.Burst}
}

// burst returns Burst or its default.
func (b BizLimits) burst() int { return b.share().EffectiveBurst() }

// fairness holds the per-bizID limits and what the operator's view shows:
// sends per second, when a limit last held a bizID back.
type fairness struct {
	limits map[string]BizLimits
	labels map[string]bool // bizIDs with their own metric label
	now    func() time.Time
	track  *tracker
	met    *fairMetrics

	mu        sync.Mutex
	inline    map[string]int // messages of a bizID in inline sends (new rows have no id to track)
	lim       map[string]*rate.Limiter
	throttled map[string]map[string]time.Time // bizID → limit → last time
	sends     map[string]*window
	// swept is when sweep last ran: bizIDs come and go (a one-off bizID
	// sends once), so what shows nothing of them is dropped.
	swept time.Time
}

func newFairness(limits map[string]BizLimits, labels []string, now func() time.Time, track *tracker, met *fairMetrics) *fairness {
	fr := &fairness{
		limits:    limits,
		labels:    map[string]bool{},
		now:       now,
		track:     track,
		met:       met,
		lim:       map[string]*rate.Limiter{},
		inline:    map[string]int{},
		throttled: map[string]map[string]time.Time{},
		sends:     map[string]*window{},
	}
	for _, biz := range labels {
		fr.labels[biz] = true
	}
	for biz, l := range limits {
		fr.labels[biz] = true
		if l.Rate > 0 {
			fr.lim[biz] = rate.NewLimiter(rate.Limit(l.Rate), l.burst())
			met.throttled.WithLabelValues(biz, LimitRate) // a series from the start
		}
		if l.MaxInFlight > 0 {
			met.throttled.WithLabelValues(biz, LimitMaxInFlight)
		}
	}
	return fr
}

// claim returns the store.Fair of a claim of limit rows: the weights, and
// for each limited bizID the most the limits let it take now; and which
// limit cut each capped bizID.
func (fr *fairness) claim(limit int) (*store.Fair, map[string]string) {
	f := &store.Fair{}
	var cut map[string]string
	now := fr.now()
	for biz, l := range fr.limits {
		if l.Weight > 1 {
			if f.Weights == nil {
				f.Weights = map[string]int{}
			}
			f.Weights[biz] = l.Weight
		}
		n, why := limit, ""
		if lim := fr.lim[biz]; lim != nil {
			if t := int(math.Floor(lim.TokensAt(now))); t < n {
				n, why = max(0, t), LimitRate
			}
		}
		if l.MaxInFlight > 0 {
			if room := l.MaxInFlight - fr.inFlight(biz); room < n {
				n, why = max(0, room), LimitMaxInFlight
			}
		}
		if why == "" {
			continue
		}
		if f.Max == nil {
			f.Max, cut = map[string]int{}, map[string]string{}
		}
		f.Max[biz], cut[biz] = n, why
	}
	return f, cut
}

// claimed takes the rate tokens of what a claim took and notes the bizIDs
// it cut short: those that took their whole cap (they may have more due),
// and those capped at 0 that a limit held back just before.
func (fr *fairness) claimed(f *store.Fair, cut map[string]string, got map[string]int) (throttled bool) {
	now := fr.now()
	for biz, n := range got {
		if lim := fr.lim[biz]; lim != nil && n > 0 {
			lim.ReserveN(now, n) // n is at most the tokens there were (or the burst)
		}
	}
	fr.mu.Lock()
	defer fr.mu.Unlock()
	for biz, why := range cut {
		n, c := got[biz], f.Max[biz]
		switch {
		case c > 0 && n >= c:
			fr.held(biz, why, now, 1)
		case c == 0 && now.Sub(fr.throttled[biz][why]) < throttledFor:
			fr.throttled[biz][why] = now // still held back; counted when it began
		default:
			continue
		}
		throttled = true
	}
	return throttled
}

// capped tells whether biz has a cap on messages in flight.
func (fr *fairness) capped(biz string) bool { return fr.limits[biz].MaxInFlight > 0 }

// inFlight counts biz's messages queued, being sent or in inline sends.
func (fr *fairness) inFlight(biz string) int {
	fr.mu.Lock()
	n := fr.inline[biz]
	fr.mu.Unlock()
	return n + fr.track.count(biz)
}

// allow tells whether a message of biz may be sent now on the fast path
// (inline or handed over), taking a rate token if so; a refusal is counted
// as throttled. With inline, an allowed message counts as in flight until
// inlineDone.
func (fr *fairness) allow(biz string, inline bool) bool {
	l, ok := fr.limits[biz]
	if !ok {
		return true
	}
	now := fr.now()
	fr.mu.Lock()
	defer fr.mu.Unlock()
	why := ""
	switch {
	case l.MaxInFlight > 0 && fr.inline[biz]+fr.track.count(biz) >= l.MaxInFlight:
		why = LimitMaxInFlight
	case fr.lim[biz] != nil && !fr.lim[biz].AllowN(now, 1):
		why = LimitRate
	default:
		if inline {
			fr.inline[biz]++
		}
		return true
	}
	fr.held(biz, why, now, 1)
	return false
}

// inlineDone ends an inline send allowed by allow.
func (fr *fairness) inlineDone(biz string) {
	if _, ok := fr.limits[biz]; !ok {
		return
	}
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if fr.inline[biz]--; fr.inline[biz] <= 0 {
		delete(fr.inline, biz)
	}
}

// held notes that a limit held biz back. fr.mu must be held.
func (fr *fairness) held(biz, why string, now time.Time, n int) {
	if fr.throttled[biz] == nil {
		fr.throttled[biz] = map[string]time.Time{}
	}
	fr.throttled[biz][why] = now
	fr.met.throttled.WithLabelValues(fr.label(biz), why).Add(float64(n))
}

// label is biz's metric label: its own for a bizID of forward.biz (or
// Config.MetricBizIDs), "other" for the rest, so that producers cannot
// grow the label set.
func (fr *fairness) label(biz string) string {
	if fr.labels[biz] {
		return biz
	}
	return "other"
}

// sent counts n messages of biz written sent.
func (fr *fairness) sent(biz string, n int) {
	fr.met.sent.WithLabelValues(fr.label(biz)).Add(float64(n))
	now := fr.now()
	fr.mu.Lock()
	defer fr.mu.Unlock()
	w := fr.sends[biz]
	if w == nil {
		fr.sweep(now)
		w = &window{}
		fr.sends[biz] = w
	}
	w.add(now, n)
}

// sweep drops, at most once per windowSeconds, the send windows of bizIDs
// that sent nothing in the last windowSeconds and the throttle notes older
// than throttledFor: the view would show zero and nothing for them, and
// without this every bizID ever seen would stay for good. fr.mu must be
// held.
func (fr *fairness) sweep(now time.Time) {
	if now.Sub(fr.swept) < windowSeconds*time.Second {
		return
	}
	fr.swept = now
	for b, w := range fr.sends {
		if w.idle(now) {
			delete(fr.sends, b)
		}
	}
	for b, m := range fr.throttled {
		for why, at := range m {
			if now.Sub(at) >= throttledFor {
				delete(m, why)
			}
		}
		if len(m) == 0 {
			delete(fr.throttled, b)
		}
	}
}

// BizStatus is one bizID's part of the forwarder, for the operator's view.
type BizStatus struct {
	BizID string
	// Limits are the configured ones (zero: defaults, no limit), with the
	// default burst filled in.
	Limits BizLimits
	// Configured tells whether forward.biz names the bizID.
	Configured bool
	// InFlight are its messages queued or being sent by this forwarder.
	InFlight int
	// SendRate is messages written sent per second, over the last 10s.
	SendRate float64
	// Throttled names the limits that held its messages back in the last
	// 5s (LimitRate, LimitMaxInFlight), sorted; empty when none.
	Throttled []string
}

// BizStatus returns the bizIDs this forwarder knows (configured, sending
// or holding messages), by bizID.
func (f *Forwarder) BizStatus() []BizStatus {
	fr := f.fair
	now := fr.now()
	inFlight := fr.track.counts()
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.sweep(now)
	for b, n := range fr.inline {
		inFlight[b] += n
	}
	names := map[string]bool{}
	for b := range fr.limits {
		names[b] = true
	}
	for b := range fr.sends {
		names[b] = true
	}
	for b := range inFlight {
		names[b] = true
	}
	out := make([]BizStatus, 0, len(names))
	for _, biz := range slices.Sorted(maps.Keys(names)) {
		l, ok := fr.limits[biz]
		if l.Rate > 0 {
			l.Burst = l.burst()
		}
		s := BizStatus{BizID: biz, Limits: l, Configured: ok, InFlight: inFlight[biz]}
		if w := fr.sends[biz]; w != nil {
			s.SendRate = w.rate(now)
		}
		for why, at := range fr.throttled[biz] {
			if now.Sub(at) < throttledFor {
				s.Throttled = append(s.Throttled, why)
			}
		}
		slices.Sort(s.Throttled)
		out = append(out, s)
	}
	return out
}

// window counts events per second over the last windowSeconds.
type window struct {
	sec [windowSeconds]int64 // unix second of each slot
	n   [windowSeconds]int64
}

const windowSeconds = 10

func (w *window) add(now time.Time, n int) {
	s := now.Unix()
	i := s % windowSeconds
	if w.sec[i] != s {
		w.sec[i], w.n[i] = s, 0
	}
	w.n[i] += int64(n)
}

// idle tells whether nothing was added in now's second or the
// windowSeconds before it.
func (w *window) idle(now time.Time) bool {
	s := now.Unix()
	for i := range w.sec {
		if w.n[i] > 0 && s-w.sec[i] <= windowSeconds {
			return false
		}
	}
	return true
}

// rate is the events per second over the last windowSeconds whole seconds
// before now's.
func (w *window) rate(now time.Time) float64 {
	s := now.Unix()
	var total int64
	for i := range w.sec {
		if d := s - w.sec[i]; d >= 1 && d <= windowSeconds {
			total += w.n[i]
		}
	}
	return float64(total) / windowSeconds
}

// fairMetrics are the per-bizID families.
type fairMetrics struct {
	sent      *prometheus.CounterVec
	throttled *prometheus.CounterVec
}

func newFairMetrics() *fairMetrics {
	return &fairMetrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_forward_biz_sent_total",
			Help: "Messages written sent, by bizID (inline sends and sent marks).",
		}, []string{"biz_id"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_forward_biz_throttled_total",
			Help: "Times a per-bizID limit (forward.biz[]: limit rate or max_in_flight) held a bizID's messages back: each message kept from the fast path, and each scan whose claim the limit cut short. Held messages wait in the store; they are never failed.",
		}, []string{"biz_id", "limit"}),
	}
}
