package kafka_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/memstore"
)

// throttleProduces answers the first n produce requests with
// throttle_time_ms and a retriable NOT_ENOUGH_REPLICAS for every partition
// (so nothing is stored and the client produces again once the throttle
// is over); the others are handled as usual.
func throttleProduces(c *kfake.Cluster, n int64, throttle time.Duration) *atomic.Int64 {
	var seen atomic.Int64
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if seen.Add(1) > n {
			return nil, nil, false
		}
		req := kreq.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		resp.ThrottleMillis = int32(throttle / time.Millisecond)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.NotEnoughReplicas.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return &seen
}

// A broker answering produces with throttle_time_ms slows the target
// down: the forwarder hears it (kgo.HookBrokerThrottle), pauses the
// target and counts it, and nothing is lost or spends an attempt
// (MaxAttempts 1 would make a failed message DEAD).
func TestBrokerThrottleSlowsTheTargetDown(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(3, "orders"))
	throttled := throttleProduces(c, 2, 300*time.Millisecond)
	tg := newTarget(t, c, nil)
	st := memstore.New(time.Now)
	owned := ingest.NewOwnership()
	owned.Assign(0)
	reg := prometheus.NewRegistry()
	f, err := forwarder.New(forwarder.Config{
		Targets: map[string]forwarder.Target{"kafka": tg}, DefaultTarget: "kafka",
		ScanInterval: 10 * time.Millisecond, MaxAttempts: 1, SendTimeout: 10 * time.Second,
		Registerer: reg, Logger: quiet,
	}, st, owned)
	require.NoError(t, err)
	require.NoError(t, f.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, f.Stop(context.Background())) })

	const n = 20
	var changes []store.Change
	for i := range n {
		key := fmt.Sprint("k", i)
		body := &state.Body{Payload: []byte("p"), Topic: "orders", ForwardKey: key}
		changes = append(changes,
			store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindPrepare, At: time.Now(), Body: body}},
			store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindCommit, At: time.Now()}})
	}
	res, err := st.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: time.Minute})
	require.NoError(t, err)
	f.Handoff(res.Sendable)
	for i := range n {
		require.Eventually(t, func() bool {
			m, err := st.Get(t.Context(), "shop", fmt.Sprint("k", i))
			return err == nil && m.SendStatus == state.SendSent
		}, 20*time.Second, 5*time.Millisecond, "k%d sent", i)
		m, err := st.Get(t.Context(), "shop", fmt.Sprint("k", i))
		require.NoError(t, err)
		require.Zero(t, m.SendAttempts, "no attempt spent on a throttling broker")
	}
	require.GreaterOrEqual(t, throttled.Load(), int64(3), "the throttled produces were produced again")
	recs := consume(t, c, "orders", n)
	require.Len(t, recs, n, "nothing lost, nothing twice")
	require.Positive(t, metricValue(t, reg, "eventcenter_forward_target_throttled_total", "cause", "broker_throttle"))
	// The operator's view says the broker paused the target, and for how long.
	ts := f.TargetStatus()
	require.Len(t, ts, 1)
	require.Equal(t, "kafka", ts[0].Target)
	require.Equal(t, "broker_throttle", ts[0].Cause)
	require.Equal(t, 300*time.Millisecond, ts[0].Pause)
	require.False(t, ts[0].Since.IsZero())
}

// metricValue reads a counter or gauge of the registry with the given
// label (name, value); it fails the test when there is none.
func metricValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{%s=%q}", name, label, value)
	return 0
}
