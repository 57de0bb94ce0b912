package resolver

import (
	"fmt"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Status is what an operator sees of one registry.
type Status struct {
	// Registry is its first server (host:port), the metrics' label;
	// Servers all of them.
	Registry string   `json:"registry"`
	Servers  []string `json:"servers"`
	// Connected tells whether a session is open; Since is when that last
	// changed.
	Connected bool      `json:"connected"`
	Since     time.Time `json:"since"`
	// SessionExpiries counts the sessions the server expired.
	SessionExpiries int64           `json:"session_expiries"`
	Services        []ServiceStatus `json:"services"`
}

// ServiceStatus is one watched service of a registry.
type ServiceStatus struct {
	Interface string `json:"interface"`
	// Providers is the number of provider entries in the last list read
	// (every protocol, version and group).
	Providers int `json:"providers"`
	// Known tells whether a list was ever read; Updated is when the last
	// one was.
	Known   bool      `json:"known"`
	Updated time.Time `json:"updated,omitzero"`
	// LastError is the last read's error while it has not been read
	// since.
	LastError string `json:"last_error,omitempty"`
}

// Status returns every registry in use, sorted by name, with its services
// sorted by interface.
func (z *ZooKeeper) Status() []Status {
	z.mu.Lock()
	regs := make([]*registry, 0, len(z.regs))
	for _, r := range z.regs {
		regs = append(regs, r)
	}
	z.mu.Unlock()
	out := make([]Status, 0, len(regs))
	for _, r := range regs {
		st := Status{Registry: r.name, Servers: r.servers, Connected: r.connected.Load(),
			Since: time.Unix(0, r.since.Load()), SessionExpiries: r.expiries.Load()}
		r.mu.Lock()
		for _, s := range r.services {
			s.mu.RLock()
			ss := ServiceStatus{Interface: s.iface, Providers: len(s.list), Known: s.known, Updated: s.updated}
			if s.err != nil {
				ss.LastError = s.err.Error()
			}
			s.mu.RUnlock()
			st.Services = append(st.Services, ss)
		}
		r.mu.Unlock()
		sort.Slice(st.Services, func(i, j int) bool { return st.Services[i].Interface < st.Services[j].Interface })
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Registry < out[j].Registry })
	return out
}

// metrics are the registry metrics. Their label is a registry's first
// server: only registries a bizID's allow list admits are ever used, so
// the label values are bounded by the configuration.
type metrics struct {
	connected, services, providers, empty *prometheus.GaugeVec
	expiries                              *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"registry"})
	}
	m := &metrics{
		connected: gauge("eventcenter_checkback_registry_connected",
			"1 while the center holds a session with the check-back registry, 0 while it reconnects (the last provider lists are used meanwhile)."),
		services: gauge("eventcenter_checkback_registry_services",
			"Services whose providers the center watches in the registry."),
		providers: gauge("eventcenter_checkback_registry_providers",
			"Provider entries in the registry's watched provider lists (all services)."),
		empty: gauge("eventcenter_checkback_registry_services_without_providers",
			"Watched services of the registry whose last list holds no provider, or that were never read."),
		expiries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "eventcenter_checkback_registry_session_expiries_total",
			Help: "ZooKeeper sessions of the registry that the server expired."}, []string{"registry"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.connected, m.services, m.providers, m.empty, m.expiries} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register registry metrics: %w", err)
		}
	}
	return m, nil
}

// recount sets the service and provider gauges of r.
func (m *metrics) recount(r *registry) {
	r.mu.Lock()
	n, providers, empty := len(r.services), 0, 0
	for _, s := range r.services {
		s.mu.RLock()
		providers += len(s.list)
		if len(s.list) == 0 {
			empty++
		}
		s.mu.RUnlock()
	}
	r.mu.Unlock()
	m.services.WithLabelValues(r.name).Set(float64(n))
	m.providers.WithLabelValues(r.name).Set(float64(providers))
	m.empty.WithLabelValues(r.name).Set(float64(empty))
}
