package bench

import (
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// MetricValue is one series of the center's metrics at the end of the run:
// a counter's or gauge's value, or a histogram's count, sum and mean.
type MetricValue struct {
	Name  string  `json:"name"`
	Value float64 `json:"value,omitempty"`
	Count uint64  `json:"count,omitempty"`
	Sum   float64 `json:"sum,omitempty"`
	Mean  float64 `json:"mean,omitempty"`
}

// snapshot reads the eventcenter_* series of reg (the embedded center's).
func snapshot(reg prometheus.Gatherer) []MetricValue {
	mfs, err := reg.Gather()
	if err != nil {
		return nil
	}
	var out []MetricValue
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "eventcenter_") || mf.GetName() == "eventcenter_build_info" {
			continue
		}
		for _, m := range mf.GetMetric() {
			v := MetricValue{Name: mf.GetName() + labels(m.GetLabel())}
			switch {
			case m.Counter != nil:
				v.Value = m.Counter.GetValue()
			case m.Gauge != nil:
				v.Value = m.Gauge.GetValue()
			case m.Histogram != nil:
				v.Count, v.Sum = m.Histogram.GetSampleCount(), m.Histogram.GetSampleSum()
				if v.Count > 0 {
					v.Mean = v.Sum / float64(v.Count)
				}
			default:
				continue
			}
			if v.Value == 0 && v.Count == 0 {
				continue
			}
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func labels(ls []*dto.LabelPair) string {
	if len(ls) == 0 {
		return ""
	}
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.GetName() + "=" + l.GetValue()
	}
	return "{" + strings.Join(parts, ",") + "}"
}
