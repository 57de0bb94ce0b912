package ingest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
)

// Values of the result label of eventcenter_envelopes_total.
const (
	resultApplied   = "applied"
	resultDuplicate = "duplicate"
	resultConflict  = "conflict"
	resultInvalid   = "invalid"
)

// Metrics are an ingester's metrics. The ingesters of a center's lanes
// share one Metrics (Config.Metrics). The records' counters, the batch
// histograms and the error counters carry a lane label: the extra lane's
// name (Config.LaneName), empty for the default lane, so a center without
// lanes shows the series it always did. eventcenter_owned_partitions is
// the whole ownership set, eventcenter_consumer_lag is labelled by store
// partition (lane.go), conflicts and cancels add up over lanes.
type Metrics = metrics

// NewMetrics makes the ingest metrics and registers them with reg (nil:
// not registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) { return newMetrics(reg) }

type metrics struct {
	envelopes   *prometheus.CounterVec
	applyDur    *prometheus.HistogramVec
	batchSize   *prometheus.HistogramVec
	lag         *prometheus.GaugeVec
	dlq         *prometheus.CounterVec
	dlqStripped *prometheus.CounterVec
	dlqDropped  *prometheus.CounterVec
	storeErrs   *prometheus.CounterVec
	dlqErrs     *prometheus.CounterVec
	commitErrs  *prometheus.CounterVec
	owned       prometheus.Gauge
	lost        *prometheus.CounterVec
	conflicts   prometheus.Counter
	cancels     *prometheus.CounterVec
}

// laneLabel is the label of the lane dimension of the ingest metrics.
const laneLabel = "lane"

// laneMetrics are one ingester's view of the shared metrics: the lane
// label set to its lane.
type laneMetrics struct {
	envelopes   *prometheus.CounterVec
	applyDur    prometheus.Observer
	batchSize   prometheus.Observer
	lag         *prometheus.GaugeVec
	dlq         *prometheus.CounterVec
	dlqStripped *prometheus.CounterVec
	dlqDropped  *prometheus.CounterVec
	storeErrs   prometheus.Counter
	dlqErrs     prometheus.Counter
	commitErrs  prometheus.Counter
	owned       prometheus.Gauge
	lost        prometheus.Counter
	conflicts   prometheus.Counter
	cancels     *prometheus.CounterVec
}

// forLane returns the metrics of the lane named lane ("" for the default
// lane), with its series made at once (alerts on increase need them from
// the start).
func (m *metrics) forLane(lane string) *laneMetrics {
	l := prometheus.Labels{laneLabel: lane}
	lm := &laneMetrics{
		envelopes:   m.envelopes.MustCurryWith(l),
		applyDur:    m.applyDur.With(l),
		batchSize:   m.batchSize.With(l),
		lag:         m.lag,
		dlq:         m.dlq.MustCurryWith(l),
		dlqStripped: m.dlqStripped.MustCurryWith(l),
		dlqDropped:  m.dlqDropped.MustCurryWith(l),
		storeErrs:   m.storeErrs.With(l),
		dlqErrs:     m.dlqErrs.With(l),
		commitErrs:  m.commitErrs.With(l),
		owned:       m.owned,
		lost:        m.lost.With(l),
		conflicts:   m.conflicts,
		cancels:     m.cancels,
	}
	for _, c := range dlqCauses {
		lm.dlqStripped.WithLabelValues(c)
		lm.dlqDropped.WithLabelValues(c)
	}
	return lm
}

// Values of the result label of eventcenter_cancels_total.
const (
	cancelCancelled = "cancelled"
	cancelTooLate   = "too_late"
	cancelNoop      = "noop"
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		envelopes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_envelopes_total",
			Help: "Control records read, by envelope type (prepare, commit, rollback, cancel, unknown), result (applied, duplicate, conflict, invalid) and lane (an extra lane's name; none for the default lane).",
		}, []string{"type", "result", laneLabel}),
		applyDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "eventcenter_ingest_batch_apply_duration_seconds",
			Help:    "Time of one successful store apply of a partition's batch, by lane (an extra lane's name; none for the default lane).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{laneLabel}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "eventcenter_ingest_batch_size",
			Help:    "Records per partition batch (one store transaction), by lane (an extra lane's name; none for the default lane).",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9),
		}, []string{laneLabel}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eventcenter_consumer_lag",
			Help: "Control records not yet applied per owned partition (high watermark minus next offset to apply), as of the last fetch. The label is the store partition: lane id × 10000 + Kafka partition (the default lane's is its Kafka partition).",
		}, []string{"partition"}),
		dlq: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_dlq_total",
			Help: "Malformed control records copied to the dead-letter topic, by reason (the offending field, too_large or unknown_type) and lane (an extra lane's name; none for the default lane).",
		}, []string{"reason", laneLabel}),
		dlqStripped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_dlq_stripped_total",
			Help: "Malformed control records written to the dead-letter topic without their value (ec-dlq-value-dropped says why), by cause of the full copy's failure (too_large, not_authorized, unknown_topic, rejected, retries_exhausted) and lane.",
		}, []string{"cause", laneLabel}),
		dlqDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_dlq_dropped_total",
			Help: "Malformed control records skipped because not even a copy without their value could be written to the dead-letter topic (logged with partition and offset), by cause of the full copy's failure and lane.",
		}, []string{"cause", laneLabel}),
		storeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_ingest_store_errors_total",
			Help: "Failed store applies of a batch (each is retried; the partition waits).",
		}, []string{laneLabel}),
		dlqErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_ingest_dlq_errors_total",
			Help: "Failed dead-letter produces (each is retried for at most ingest.dlq_retry_budget, then written without its value or dropped; the partition waits meanwhile).",
		}, []string{laneLabel}),
		commitErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_ingest_commit_errors_total",
			Help: "Failed offset commits (retried at the next poll; a rebalance replays, replays are no-ops).",
		}, []string{laneLabel}),
		owned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eventcenter_owned_partitions",
			Help: "Control partitions this instance owns, over all control lanes.",
		}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_ingest_partitions_lost_total",
			Help: "Control partitions lost without a clean revoke (the member fell out of the group); their uncommitted batches are replayed.",
		}, []string{laneLabel}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eventcenter_conflicts_total",
			Help: "Envelopes whose decision contradicted the message's first decision and was ignored.",
		}),
	}
	m.cancels = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "eventcenter_cancels_total",
		Help: "Cancel envelopes applied, by result: cancelled (the message ends CANCELLED, never sent), too_late (it was sent already, or its send was in flight: counted on the row as a conflict), noop (rolled back, cancelled already, or a replay).",
	}, []string{"result"})
	for _, r := range []string{cancelCancelled, cancelTooLate, cancelNoop} {
		m.cancels.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.envelopes, m.applyDur, m.batchSize, m.lag, m.dlq, m.dlqStripped, m.dlqDropped,
		m.storeErrs, m.dlqErrs, m.commitErrs, m.owned, m.lost, m.conflicts, m.cancels} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register ingest metrics: %w", err)
		}
	}
	return m, nil
}

func partitionLabel(p int32) string { return strconv.FormatInt(int64(p), 10) }

// typeLabel is the type label of an envelope type.
func typeLabel(t envelope.Type) string {
	switch t {
	case envelope.Prepare, envelope.Commit, envelope.Rollback, envelope.Cancel:
		return t.String()
	}
	return "unknown"
}

// effectResult is the result label of an applied change.
func effectResult(e state.Effect) string {
	switch e {
	case state.Changed:
		return resultApplied
	case state.Conflict:
		return resultConflict
	default:
		return resultDuplicate
	}
}

// boundedFields are the DecodeError fields used as dlq reasons as they are;
// any other field (a forwarded header name, a compatibility-format JSON
// field) is folded into a fixed category so the label stays bounded.
var boundedFields = map[string]bool{
	"key": true, "value": true, "partition": true,
	envelope.HeaderType: true, envelope.HeaderBiz: true, envelope.HeaderKey: true,
	envelope.HeaderTopic: true, envelope.HeaderForwardKey: true, envelope.HeaderTarget: true,
	envelope.HeaderTag: true, envelope.HeaderVerify: true, envelope.HeaderCheckAfter: true,
	envelope.HeaderOrderKey: true, envelope.HeaderDeliverAt: true, envelope.HeaderDelay: true,
	envelope.HeaderForwardPrefix + "*": true,
}

// dlqReason is the bounded reason label of a decode failure.
func dlqReason(err error, native bool) string {
	switch {
	case errors.Is(err, envelope.ErrTooLarge):
		return "too_large"
	case errors.Is(err, envelope.ErrUnknownType):
		return "unknown_type"
	}
	var de *envelope.DecodeError
	if !errors.As(err, &de) {
		return "other"
	}
	if boundedFields[de.Field] {
		return de.Field
	}
	if strings.HasPrefix(de.Field, envelope.HeaderForwardPrefix) {
		return envelope.HeaderForwardPrefix + "*"
	}
	if !native {
		return "compat"
	}
	return "other"
}
