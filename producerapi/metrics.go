package producerapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	envelopes *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_ingress_requests_total",
			Help: "Producer API requests answered, by route (prepare, commit, rollback, cancel, get, batch, openapi, unmatched) and HTTP status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "eventcenter_ingress_request_duration_seconds",
			Help:    "Time to answer a producer API request, by route; a write is answered after the broker acknowledged it.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
		envelopes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_ingress_envelopes_total",
			Help: "Envelopes the producer API wrote to the control topic (acknowledged by the broker), by type.",
		}, []string{"type"}),
	}
	// The series exist from the start, so that rate() and the alert see
	// the first error.
	for _, rt := range routes {
		m.duration.WithLabelValues(rt.name)
	}
	for _, t := range []string{"prepare", "commit", "rollback"} {
		m.envelopes.WithLabelValues(t)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.duration, m.envelopes} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
