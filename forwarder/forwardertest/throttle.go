package forwardertest

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/memstore"
)

// A forwarder in front of a broker that asks it to slow down pauses the
// target instead of spending attempts: with MaxAttempts 1 every message
// would be DEAD at its first failure, yet all are sent once, none with an
// attempt spent, the pause is counted by cause and TargetStatus shows it.
func throttling(t *testing.T, s Suite) {
	const n = 10
	b := s.New(t, map[string]int{"orders": 2})
	tg := b.Target(t, Options{})
	// Learn the topic's route first: under load a RocketMQ client's first
	// lookup can fail ("route info not found"), an error MaxAttempts 1
	// would turn into a DEAD message.
	require.Eventually(t, func() bool {
		return tg.Send(t.Context(), []forwarder.Record{record("orders", "shop:warm-up", "w", []byte("w"))})[0].Err == nil
	}, 20*time.Second, 50*time.Millisecond, "route of orders")
	cause, pause := b.Throttle(t, 3)

	st := memstore.New(time.Now)
	reg := prometheus.NewRegistry()
	f, err := forwarder.New(forwarder.Config{
		Targets: map[string]forwarder.Target{"t": tg}, DefaultTarget: "t",
		// A short lease: a message left to its lease (not put off with
		// the pause) comes back within the wait below instead of after
		// the default 30 s.
		ScanInterval: 10 * time.Millisecond, MaxAttempts: 1, Registerer: reg,
		Lease: 6 * time.Second, SendTimeout: 5 * time.Second, InlineTimeout: time.Second,
		Logger: slog.New(slog.DiscardHandler),
	}, st, partitionZero{})
	require.NoError(t, err)
	require.NoError(t, f.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, f.Stop(context.Background())) })

	var changes []store.Change
	for i := range n {
		key := fmt.Sprint("k", i)
		body := &state.Body{Payload: []byte("p"), Topic: "orders", ForwardKey: key}
		changes = append(changes,
			store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindPrepare, At: time.Now(), Body: body}},
			store.Change{BizID: "shop", Key: key, Event: state.Event{Kind: state.KindCommit, At: time.Now()}})
	}
	res, err := st.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: 6 * time.Second})
	require.NoError(t, err)
	began := time.Now()
	f.Handoff(res.Sendable)
	for i := range n {
		key := fmt.Sprint("k", i)
		ok := assert.Eventually(t, func() bool {
			m, err := st.Get(t.Context(), "shop", key)
			return err == nil && m.SendStatus == state.SendSent
		}, 20*time.Second, 5*time.Millisecond, "%s sent", key)
		m, err := st.Get(t.Context(), "shop", key)
		require.NoError(t, err)
		if !ok {
			t.Logf("%s after %s: %+v; target status %+v", key, time.Since(began), m, f.TargetStatus())
		}
		require.True(t, ok)
		require.Zero(t, m.SendAttempts, "%s: no attempt spent on a throttling broker", key)
	}
	got := b.Received(t, "orders", n+1)
	seen := map[string]bool{}
	for _, g := range got {
		require.False(t, seen[g.ID], "%s stored twice", g.ID)
		seen[g.ID] = true
	}
	require.Positive(t, throttledTotal(t, reg, cause), "eventcenter_forward_target_throttled_total{cause=%q}", cause)
	ts := f.TargetStatus()
	require.Len(t, ts, 1)
	require.Equal(t, "t", ts[0].Target)
	require.Equal(t, cause, ts[0].Cause)
	require.False(t, ts[0].Since.IsZero())
	if pause > 0 {
		require.Equal(t, pause, ts[0].Pause)
	} else {
		require.Positive(t, ts[0].Pause)
	}
}

// partitionZero owns partition 0, where the memory store puts every
// message.
type partitionZero struct{}

func (partitionZero) Partitions() []int32      { return []int32{0} }
func (partitionZero) Changed() <-chan struct{} { return nil }

// throttledTotal reads eventcenter_forward_target_throttled_total{target="t",cause}.
func throttledTotal(t *testing.T, reg *prometheus.Registry, cause string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "eventcenter_forward_target_throttled_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["target"] == "t" && labels["cause"] == cause {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no eventcenter_forward_target_throttled_total{cause=%q}", cause)
	return 0
}
