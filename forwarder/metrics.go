package forwarder

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of eventcenter_forward_total.
const (
	resultSent  = "sent"
	resultRetry = "retry"
	resultDead  = "dead"
	// resultDeferred: not sent because the target's breaker was open; the
	// lease brings the message back.
	resultDeferred = "deferred"
	// resultNotSent: an inline send left to the regular path.
	resultNotSent = "not_sent"
)

type metrics struct {
	forward      *prometheus.CounterVec
	inline       *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	commitToSent prometheus.Histogram
	lateness     prometheus.Histogram
	dropped      prometheus.Counter
	released     prometheus.Counter
	chained      prometheus.Counter
	behind       prometheus.Counter
	runs         *prometheus.CounterVec
	ahead        *prometheus.CounterVec
	dead         *prometheus.CounterVec
	breakerOpen  *prometheus.GaugeVec
	throttleMetrics
	fair *fairMetrics
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		forward: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_forward_total",
			Help: "Forward attempts by target and result (sent, retry, dead, deferred).",
		}, []string{"target", "result"}),
		inline: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_forward_inline_total",
			Help: "Messages sent inline, before the store wrote them (result sent, then written sent at once), or tried inline and left to the regular path (not_sent: written leased and handed over). Sent ones are also counted in eventcenter_forward_total.",
		}, []string{"target", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "eventcenter_forward_duration_seconds",
			Help:    "Duration of one batch send to a forward target.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"target"}),
		commitToSent: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "eventcenter_commit_to_sent_seconds",
			Help: "Time from a message's commit decision to its sent-mark.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30,
				60, 300, 900, 3600},
		}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "eventcenter_delivery_lateness_seconds",
			Help:    "For a scheduled message (ec-deliver-at, ec-delay): the time from its deliver-at to the target's acknowledgement of its send.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventcenter_forward_handoff_dropped_total",
			Help: "Messages handed over but not queued for sending: the queue stayed full (then their lease is released, see eventcenter_forward_handoff_released_total), the target's breaker was open or the forwarder was stopping (their lease brings them back to the scan).",
		}),
		released: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventcenter_forward_handoff_released_total",
			Help: "Dropped handoffs whose send lease was released (due at once for the scan) instead of waiting for it to run out.",
		}),
		chained: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventcenter_forward_order_chained_total",
			Help: "Messages with an order key leased with their predecessor's sent mark and queued at once, instead of woken for the scan.",
		}),
		behind: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventcenter_forward_order_behind_failed_total",
			Help: "Messages with an order key not sent because an earlier message of their run (leased together) was not: released without an attempt, due again once that one is sent.",
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_forward_order_run_messages_total",
			Help: "Messages sent in a batch holding two or more messages of one order key (a run), by how the batch went: in_order (pipelined through the target's SendInOrder: the run shares one forward key) or head_of_line (one round trip per message of a key).",
		}, []string{"send"}),
		ahead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_forward_order_ahead_total",
			Help: "Messages with an order key written sent before their send and confirmed by their control partition's sent watermark (result=confirmed), or written ahead by a batch that did not confirm them and written back to pending by its replay (result=written_back).",
		}, []string{"result"}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_forward_dead_total",
			Help: "Messages given up (DEAD) by target.",
		}, []string{"target"}),
		breakerOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventcenter_forward_breaker_open",
			Help: "1 while a target's breaker is open (sends paused after consecutive failures).",
		}, []string{"target"}),
		throttleMetrics: newThrottleMetrics(),
		fair:            newFairMetrics(),
	}
	if reg == nil {
		return m, nil
	}
	// Both results are exported from the start (at 0), so that an alert
	// or a dashboard finds the series before the first one happens.
	m.ahead.WithLabelValues("confirmed")
	m.ahead.WithLabelValues("written_back")
	m.runs.WithLabelValues(sendInOrder)
	m.runs.WithLabelValues(sendHeadOfLineLabel)
	for _, c := range append([]prometheus.Collector{m.forward, m.inline, m.duration, m.commitToSent, m.lateness, m.dropped, m.released, m.chained, m.behind, m.runs, m.ahead, m.dead, m.breakerOpen,
		m.fair.sent, m.fair.throttled}, m.throttleMetrics.collectors()...) {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register forwarder metrics: %w", err)
		}
	}
	return m, nil
}
