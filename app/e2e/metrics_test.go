package e2e

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/center"
)

// counter finds one series of a metric in the center's registry.
func counter(t *testing.T, c *center.Center, name string, labels map[string]string) prometheus.Collector {
	t.Helper()
	mfs, err := c.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if matches(m, labels) {
				return constCollector{mf, m}
			}
		}
	}
	return constCollector{}
}

func matches(m *dto.Metric, labels map[string]string) bool {
	found := 0
	for _, lp := range m.GetLabel() {
		if v, ok := labels[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(labels)
}

// constCollector replays one gathered series so testutil.ToFloat64 can read
// it (0 when the series does not exist).
type constCollector struct {
	mf *dto.MetricFamily
	m  *dto.Metric
}

func (c constCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- prometheus.NewDesc("eventcenter_test_series", "", nil, nil)
}

func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	v := 0.0
	if c.m != nil {
		switch {
		case c.m.Counter != nil:
			v = c.m.GetCounter().GetValue()
		case c.m.Gauge != nil:
			v = c.m.GetGauge().GetValue()
		}
	}
	ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("eventcenter_test_series", "", nil, nil), prometheus.UntypedValue, v)
}
