package verifier

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// Outcome labels of eventcenter_checkback_total.
const (
	outcomeCommit   = "commit"
	outcomeRollback = "rollback"
	outcomeUnknown  = "unknown"
	outcomeError    = "error"
	outcomeDeferred = "deferred"
	outcomeParked   = "parked"
)

type metrics struct {
	total        *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	circuitOpen  prometheus.Gauge
	verifyFailed *prometheus.CounterVec
	disallowed   prometheus.Counter
	applyErrors  prometheus.Counter
	// applyAbandoned: results never written (lease ran out or Stop).
	applyAbandoned prometheus.Counter
	// registryTotal and providerSkipped: check-backs through a registry.
	registryTotal   *prometheus.CounterVec
	providerSkipped *prometheus.CounterVec
	fairMetrics
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_checkback_total",
			Help: "Check-backs by protocol and outcome (commit, rollback, unknown, error, deferred, parked).",
		}, []string{"protocol", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "eventcenter_checkback_duration_seconds",
			Help:    "Duration of check-back calls by protocol.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"protocol"}),
		circuitOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventcenter_checkback_circuit_open",
			Help: "Check-back endpoints whose circuit is open or half-open.",
		}),
		verifyFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_verify_failed_total",
			Help: "Messages parked as VERIFY_FAILED after their last check-back attempt, by bizID (\"other\" for bizIDs not configured).",
		}, []string{"biz_id"}),
		disallowed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventcenter_checkback_disallowed_total",
			Help: "Messages parked without a call because their check-back endpoint is not allowed for their bizID.",
		}),
		applyErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventcenter_checkback_apply_errors_total",
			Help: "Writes of a batch of check-back results the store refused (written again with backoff while their leases last).",
		}),
		applyAbandoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventcenter_checkback_apply_abandoned_total",
			Help: "Check-back results never written: the store refused them until their lease ran out or the verifier stopped (the messages are checked again).",
		}),
		registryTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_checkback_registry_total",
			Help: "Check-backs through a registry by registry (its first server, as an allow entry names it; \"other\" otherwise) and outcome (commit, rollback, unknown, error, no_provider, parked).",
		}, []string{"registry", "outcome"}),
		providerSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_checkback_registry_provider_skipped_total",
			Help: "Providers found through a registry that refused or did not answer in time, so the next one was called within the same check-back.",
		}, []string{"registry"}),
		fairMetrics: newFairMetrics(),
	}
	for _, p := range checkback.Protocols {
		for _, o := range []string{outcomeCommit, outcomeRollback, outcomeUnknown, outcomeError, outcomeDeferred, outcomeParked} {
			m.total.WithLabelValues(p.String(), o)
		}
		m.duration.WithLabelValues(p.String())
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range append([]prometheus.Collector{m.total, m.duration, m.circuitOpen, m.verifyFailed, m.disallowed, m.applyErrors, m.applyAbandoned,
		m.registryTotal, m.providerSkipped}, m.collectors()...) {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register verifier metrics: %w", err)
	}
	return m, nil
}

// touchRegistries creates the registry series of the configured
// registries, so that they read 0 before the first check-back.
func (m *metrics) touchRegistries(regs map[string]struct{}) {
	for r := range regs {
		for _, o := range []string{outcomeCommit, outcomeRollback, outcomeUnknown, outcomeError, outcomeNoProvider, outcomeParked} {
			m.registryTotal.WithLabelValues(r, o)
		}
		m.providerSkipped.WithLabelValues(r)
	}
}
