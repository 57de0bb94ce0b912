package ingest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

func TestLanePartitionMapping(t *testing.T) {
	t.Parallel()
	require.Equal(t, int32(7), StorePartition(0, 7), "the default lane's store partitions are its Kafka partitions")
	require.Equal(t, int32(20007), StorePartition(2, 7))
	require.Equal(t, int32(MaxLane*LaneStride+999), StorePartition(MaxLane, 999))
	for _, c := range []struct {
		lane int
		p    int32
	}{{0, 0}, {0, 999}, {1, 0}, {2, 7}, {MaxLane, 999}} {
		lane, p := LanePartition(StorePartition(c.lane, c.p))
		require.Equal(t, c.lane, lane)
		require.Equal(t, c.p, p)
	}
	require.Equal(t, "7", store.FormatPartition(7))
	require.Equal(t, "20007 (lane 2, partition 7)", store.FormatPartition(20007))
	require.Greater(t, LaneStride, 1000, "above config.MaxControlPartitions")
}

func TestLaneOutOfRangeRefused(t *testing.T) {
	t.Parallel()
	for _, lane := range []int{-1, MaxLane + 1} {
		_, err := New(Config{Brokers: []string{"b:9092"}, Lane: lane}, newMemStore(), NewOwnership())
		require.ErrorContains(t, err, "Lane: must be 0 (the default lane) to 100, got "+strconv.Itoa(lane))
	}
}

// An extra lane's metrics are labelled with its name: the name is required
// there, and refused for the default lane, whose series carry none.
func TestLaneNameRequiredForAnExtraLaneOnly(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Brokers: []string{"b:9092"}, Lane: 2}, newMemStore(), NewOwnership())
	require.ErrorContains(t, err, "LaneName: is required for an extra lane (Lane 2)")
	_, err = New(Config{Brokers: []string{"b:9092"}, LaneName: "gold"}, newMemStore(), NewOwnership())
	require.ErrorContains(t, err, `LaneName: must be empty for the default lane (Lane 0), got "gold"`)
}

// gatedStore holds every Apply until gate is closed.
type gatedStore struct {
	Store
	gate    chan struct{}
	entered chan struct{}
}

func (g *gatedStore) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return store.ApplyResult{}, ctx.Err()
	}
	return g.Store.Apply(ctx, req)
}

// laneTopic creates a lane's control and dead-letter topics on e.
func (e *env) laneTopic(name string, parts int32) (topic, dlq string) {
	e.t.Helper()
	topic, dlq = e.topic+".lane."+name, e.topic+".lane."+name+DLQSuffix
	for _, tp := range []string{topic, dlq} {
		resp, err := e.adm.CreateTopic(e.t.Context(), parts, 1, nil, tp)
		require.NoError(e.t, err)
		require.NoError(e.t, resp.Err)
	}
	return topic, dlq
}

// laneConfig is a lane's ingester configuration on e, sharing met.
func (e *env) laneConfig(lane int, topic, dlq string, met *Metrics) Config {
	c := e.config()
	c.Lane, c.ControlTopic, c.DLQTopic, c.Group, c.Metrics = lane, topic, dlq, e.group+".lane."+strconv.Itoa(lane), met
	c.LaneName = "lane" + strconv.Itoa(lane)
	return c
}

// A lane's records are applied while the default lane's apply is stuck:
// lanes are consumed independently. Its rows carry store partitions
// lane*LaneStride + p; one ownership set holds every lane's partitions,
// and stopping a lane gives up only its own.
func TestLaneAppliedWhileDefaultLaneBlocked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2)
	laneT, laneDLQ := e.laneTopic("quiet", 2)
	st := newMemStore()
	blocked := &gatedStore{Store: st, gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	reg := prometheus.NewRegistry()
	met, err := NewMetrics(reg)
	require.NoError(t, err)
	owned := NewOwnership()

	defCfg := e.config()
	defCfg.Metrics = met
	e.start(defCfg, blocked, nil, owned)
	lane := e.start(e.laneConfig(3, laneT, laneDLQ, met), st, nil, owned)

	want := []int32{0, 1, 30000, 30001}
	require.Eventually(t, func() bool { return slices.Equal(owned.Partitions(), want) }, waitFor, tick, "owned %v", owned.Partitions())
	require.InDelta(t, 4, testutil.ToFloat64(met.owned), 0, "eventcenter_owned_partitions counts every lane")

	for i := range 20 {
		k := fmt.Sprintf("f%d", i)
		e.produce(prepareRec("flood", k, []byte("x")), decisionRec("flood", k, "commit"))
	}
	select {
	case <-blocked.entered:
	case <-time.After(waitFor):
		t.Fatal("the default lane never applied")
	}
	for i := range 5 {
		k := fmt.Sprintf("q%d", i)
		p, c := prepareRec("quiet", k, []byte("y")), decisionRec("quiet", k, "commit")
		p.Topic, c.Topic = laneT, laneT
		e.produce(p, c)
	}
	for i := range 5 {
		k := fmt.Sprintf("q%d", i)
		require.Eventually(t, func() bool {
			m, ok := st.get("quiet", k)
			return ok && m.Status == state.Committed
		}, waitFor, tick, "lane record %s applied while the default lane is blocked", k)
		m, _ := st.get("quiet", k)
		l, p := LanePartition(m.Partition)
		require.Equal(t, 3, l, "stored partition %d", m.Partition)
		require.Contains(t, []int32{0, 1}, p)
	}
	_, ok := st.get("flood", "f0")
	require.False(t, ok, "the default lane is still blocked")
	// The lag gauge is labelled by store partition.
	var lanes int
	require.Eventually(t, func() bool {
		lanes = 0
		for _, m := range gathered(t, reg, "eventcenter_consumer_lag") {
			p, err := strconv.Atoi(m.GetLabel()[0].GetValue())
			require.NoError(t, err)
			require.Contains(t, want, int32(p))
			if p >= LaneStride {
				lanes++
			}
		}
		return lanes > 0
	}, waitFor, tick)

	close(blocked.gate)
	for i := range 20 {
		require.Eventually(t, func() bool {
			m, ok := st.get("flood", fmt.Sprintf("f%d", i))
			return ok && m.Status == state.Committed && m.Partition < LaneStride
		}, waitFor, tick)
	}
	// The records' counters and the batch histograms are per lane: the
	// extra lane's named, the default lane's without a lane label (as
	// before lanes existed).
	require.InDelta(t, 5, testutil.ToFloat64(met.envelopes.WithLabelValues("prepare", resultApplied, "lane3")), 0)
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(met.envelopes.WithLabelValues("prepare", resultApplied, "")) == 20
	}, waitFor, tick)
	batches := map[string]uint64{}
	for _, m := range gathered(t, reg, "eventcenter_ingest_batch_size") {
		lane := "absent"
		for _, lp := range m.GetLabel() {
			if lp.GetName() == laneLabel {
				lane = lp.GetValue()
			}
		}
		batches[lane] += m.GetHistogram().GetSampleCount()
	}
	require.Positive(t, batches["lane3"], "the lane's batches: %v", batches)
	// An empty label is no label to Prometheus.
	require.Positive(t, batches[""], "the default lane's batches, with an empty lane label: %v", batches)
	require.Len(t, batches, 2, "%v", batches)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, lane.Stop(ctx))
	require.Equal(t, []int32{0, 1}, owned.Partitions(), "a stopped lane gives up its own partitions only")
	require.InDelta(t, 2, testutil.ToFloat64(met.owned), 0)
}

// A lane's dead letters go to its dead-letter topic and name its topic and
// the record's Kafka partition, not the store partition.
func TestLaneDeadLetterCarriesKafkaPartition(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	laneT, laneDLQ := e.laneTopic("q", 2)
	st := newMemStore()
	e.start(e.laneConfig(2, laneT, laneDLQ, nil), st, nil, NewOwnership())
	bad := noTopic("bad", 10)
	bad.Topic, bad.Partition = laneT, 1
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addrs...), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(t.Context(), bad).FirstErr())

	dl := e.dlq
	e.dlq = laneDLQ
	dead := e.readDLQ(1)
	e.dlq = dl
	hs := headerMap(dead[0])
	require.Equal(t, laneT, hs[envelope.HeaderDLQTopic])
	require.Equal(t, "1", hs[envelope.HeaderDLQPartition], "the Kafka partition, not store partition %d", StorePartition(2, 1))
	require.Equal(t, "0", hs[envelope.HeaderDLQOffset])
}

// A record on a Kafka partition at or past LaneStride would be stored as
// the next lane's partition (sharing its watermark and claims): it goes to
// the dead-letter topic with the reason, and nothing is applied from it;
// the same envelope on partition 0 is applied.
func TestRecordBeyondTheLaneStrideIsDeadLettered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, LaneStride+1)
	// A dead-letter topic of one partition: read back without fetching
	// ten thousand, which a loaded machine may not finish within waitFor.
	e.dlq = e.topic + ".small" + DLQSuffix
	resp, err := e.adm.CreateTopic(t.Context(), 1, 1, nil, e.dlq)
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	cfg := e.config()
	cfg.DLQTopic = e.dlq
	st := newMemStore()
	in := e.start(cfg, st, nil, NewOwnership())

	manual, err := kgo.NewClient(kgo.SeedBrokers(e.addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	require.NoError(t, err)
	defer manual.Close()
	beyond := prepareRec("shop", "beyond", []byte("x"))
	beyond.Topic, beyond.Partition = e.topic, LaneStride
	within := prepareRec("shop", "within", []byte("x"))
	within.Topic, within.Partition = e.topic, 0
	require.NoError(t, manual.ProduceSync(t.Context(), beyond, within).FirstErr())

	require.Eventually(t, func() bool { _, ok := st.get("shop", "within"); return ok }, waitFor, tick)
	dead := e.readDLQ(1)
	require.Equal(t, beyond.Key, dead[0].Key)
	reason := headerMap(dead[0])[envelope.HeaderDLQReason]
	require.Contains(t, reason, "at most 10000 partitions")
	require.Contains(t, reason, "partition 10000 would be stored as the next lane's")
	_, ok := st.get("shop", "beyond")
	require.False(t, ok, "a record beyond the stride was applied")
	// Counted once the write returns, which may be after the reader saw it.
	require.Eventually(t, func() bool { return testutil.ToFloat64(in.met.dlq.WithLabelValues("partition")) == 1 }, waitFor, tick)
}

// gathered returns the series of the metric named name in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) []*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}
