package forwarder

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// Adapting to a target that throttles, so that its backoff does not cost attempts. A broker that asks the
// center to slow down is not failing: sending on at the same pace spends
// attempts (RocketMQ answers SYSTEM_BUSY, a Kafka producer's records wait
// behind throttle_time_ms until their send times out) and can drive
// messages to DEAD. Instead the target's lane pauses:
//
//   - Kafka: the target reports every throttle_time_ms a broker answers
//     (franz-go's HookBrokerThrottle) through ThrottleSource; the lane
//     sends no new batch until that time has passed.
//   - RocketMQ: a send answered SYSTEM_BUSY (flow control, "broker busy")
//     fails with an error marked Throttled; its messages are put off (their
//     lease released to a later time, no attempt spent) and the lane
//     pauses for a backoff that doubles while the broker stays busy (from
//     throttleBackoffMin to throttleBackoffMax) and resets at the first
//     batch that goes through.
//
// The pause ends by itself: the lane recovers when the broker stops
// asking. Metrics: eventcenter_forward_target_throttle_seconds{target}
// (the pause asked for or chosen, 0 once a batch went through after it)
// and eventcenter_forward_target_throttled_total{target,cause}.

// Pause bounds of a target answering "busy" without saying for how long.
const (
	throttleBackoffMin = 100 * time.Millisecond
	throttleBackoffMax = 10 * time.Second
)

// Causes of eventcenter_forward_target_throttled_total.
const (
	causeBrokerThrottle = "broker_throttle" // Kafka throttle_time_ms
	causeBusy           = "busy"            // RocketMQ SYSTEM_BUSY / flow control
)

// ThrottleSource is implemented by targets that learn from the broker that
// it throttles them without failing the send (a Kafka answer carrying
// throttle_time_ms). The forwarder registers fn once, before any Send; the
// target calls it with the throttle asked for, from any goroutine.
type ThrottleSource interface {
	OnThrottle(fn func(time.Duration))
}

// throttledError marks a send error that is the target's flow control.
type throttledError struct{ err error }

func (e throttledError) Error() string { return e.err.Error() }
func (e throttledError) Unwrap() error { return e.err }

// Throttled marks err as the target's flow control (RocketMQ SYSTEM_BUSY):
// the message is put off without spending an attempt and the target's
// sends pause.
func Throttled(err error) error {
	if err == nil {
		return nil
	}
	return throttledError{err}
}

// IsThrottled tells whether err (or an error it wraps) was marked
// Throttled.
func IsThrottled(err error) bool {
	var t throttledError
	return errors.As(err, &t)
}

// pacer holds one target's sends while it throttles. Times are wall clock.
type pacer struct {
	gauge  prometheus.Gauge
	events *prometheus.CounterVec // by cause

	mu      sync.Mutex
	until   time.Time     // no batch is sent before
	since   time.Time     // when the last pause began
	backoff time.Duration // the next pause for a busy answer; 0: throttleBackoffMin
	shown   bool          // the gauge shows a throttle
	pauseD  time.Duration // the last pause (TargetStatus)
	cause   string        // why it last paused (TargetStatus)
}

func newPacer(m *throttleMetrics, target string) *pacer {
	p := &pacer{gauge: m.throttle.WithLabelValues(target), events: m.throttled.MustCurryWith(prometheus.Labels{"target": target})}
	p.events.WithLabelValues(causeBrokerThrottle)
	p.events.WithLabelValues(causeBusy)
	return p
}

// throttle pauses the target for d from now (a broker's throttle_time_ms).
func (p *pacer) throttle(d time.Duration) {
	if d <= 0 {
		return
	}
	p.events.WithLabelValues(causeBrokerThrottle).Inc()
	p.pause(d, causeBrokerThrottle)
}

// busy pauses the target after a busy answer to a batch sent at sent,
// for a backoff that doubles while answers stay busy; it returns how long
// the batch's messages are put off. Batches sent before the last pause
// began (in flight together) share that pause: one busy spell doubles the
// backoff once, however many batches it answers.
func (p *pacer) busy(sent time.Time) time.Duration {
	p.mu.Lock()
	if sent.Before(p.since) {
		left := max(time.Until(p.until), throttleBackoffMin)
		p.mu.Unlock()
		return left
	}
	d := max(p.backoff, throttleBackoffMin)
	p.backoff = min(2*d, throttleBackoffMax)
	p.mu.Unlock()
	p.events.WithLabelValues(causeBusy).Inc()
	p.pause(d, causeBusy)
	return d
}

func (p *pacer) pause(d time.Duration, cause string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if until := now.Add(d); until.After(p.until) {
		p.until = until
	}
	p.since, p.pauseD, p.cause = now, d, cause
	p.gauge.Set(d.Seconds())
	p.shown = true
}

// went records a batch that went through without a busy answer: the busy
// backoff starts over, and once the pause is over the gauge says 0.
func (p *pacer) went() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backoff = 0
	if p.shown && !time.Now().Before(p.until) {
		p.gauge.Set(0)
		p.shown = false
	}
}

// paused tells whether the target's sends are paused now (inline sends
// are then left to the lanes, which wait).
func (p *pacer) paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Now().Before(p.until)
}

// TargetStatus is one target's throttle, for the operator's view.
type TargetStatus struct {
	Target string
	// Paused tells whether its sends are paused now; Left is how long
	// for still.
	Paused bool
	Left   time.Duration
	// Cause is why it last paused: "broker_throttle" (Kafka
	// throttle_time_ms) or "busy" (RocketMQ SYSTEM_BUSY); empty when it
	// never did. Pause is that pause's length, Since when it began.
	Cause string
	Pause time.Duration
	Since time.Time
}

// status is p's TargetStatus at now.
func (p *pacer) status(name string, now time.Time) TargetStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := TargetStatus{Target: name, Cause: p.cause, Pause: p.pauseD, Since: p.since}
	if left := p.until.Sub(now); left > 0 {
		s.Paused, s.Left = true, left
	}
	return s
}

// TargetStatus returns every target's throttle, by name. Safe from any
// goroutine.
func (f *Forwarder) TargetStatus() []TargetStatus {
	now := time.Now() // the pacer's clock is the wall clock
	out := make([]TargetStatus, 0, len(f.lanes))
	for _, name := range slices.Sorted(maps.Keys(f.lanes)) {
		out = append(out, f.lanes[name].pace.status(name, now))
	}
	return out
}

// wait blocks until the target's pause is over; false when ctx ended or
// stop closed first (then the messages are left to their leases: a
// paused target must not hold up a stop).
func (p *pacer) wait(ctx context.Context, stop <-chan struct{}) bool {
	for {
		p.mu.Lock()
		left := time.Until(p.until)
		p.mu.Unlock()
		if left <= 0 {
			return true
		}
		t := time.NewTimer(left)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-stop:
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// newThrottleRelease builds the KindSendDeferred change that puts off a
// message its target answered busy: due again after the pause, with no
// attempt spent, if the row still carries lease token tok.
func newThrottleRelease(m *state.Message, tok int64, now time.Time, pause time.Duration) store.Change {
	return store.Change{
		BizID:      m.BizID,
		Key:        m.Key,
		Partition:  m.Partition,
		LeaseToken: tok,
		Event:      state.Event{Kind: state.KindSendDeferred, At: now, RetryAt: now.Add(pause)},
	}
}

// throttleMetrics are the throttle metrics of the targets.
type throttleMetrics struct {
	throttle  *prometheus.GaugeVec
	throttled *prometheus.CounterVec
}

func newThrottleMetrics() throttleMetrics {
	return throttleMetrics{
		throttle: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventcenter_forward_target_throttle_seconds",
			Help: "The pause a forward target asked for (Kafka throttle_time_ms) or was given after a busy answer (RocketMQ SYSTEM_BUSY); 0 once a batch went through after it.",
		}, []string{"target"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_forward_target_throttled_total",
			Help: "Times a forward target throttled the center, by cause: broker_throttle (Kafka throttle_time_ms), busy (RocketMQ SYSTEM_BUSY; its messages were put off without spending an attempt).",
		}, []string{"target", "cause"}),
	}
}

func (m throttleMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.throttle, m.throttled}
}
