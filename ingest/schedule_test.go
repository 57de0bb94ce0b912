package ingest

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// TestScheduleResolvedFromTheRecordTime: ec-delay is counted from the
// control record's timestamp, ec-deliver-at is kept; a schedule not after
// the record's time or beyond MaxDelay is dead-lettered with the header
// as the reason; a scheduled COMMIT is not handed over (not due), and a
// cancel envelope ends the message CANCELLED.
func TestScheduleResolvedFromTheRecordTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st, fwd := newMemStore(), &handoffs{}
	cfg := e.config()
	cfg.MaxDelay = time.Hour
	in := e.start(cfg, st, fwd, NewOwnership())

	ts := time.Now().Truncate(time.Millisecond)
	hdr := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
	at := func(r *kgo.Record) *kgo.Record { r.Timestamp = ts; return r }
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	bad := []*kgo.Record{
		at(prepareRec("shop", "past", nil, hdr(envelope.HeaderDeliverAt, ms(ts.Add(-time.Second))))),
		at(prepareRec("shop", "far", nil, hdr(envelope.HeaderDeliverAt, ms(ts.Add(2*time.Hour))))),
		at(prepareRec("shop", "far-delay", nil, hdr(envelope.HeaderDelay, "7200000"))),
	}
	e.produce(
		at(prepareRec("shop", "delay", nil, hdr(envelope.HeaderDelay, "60000"))),
		at(prepareRec("shop", "at", nil, hdr(envelope.HeaderDeliverAt, ts.Add(30*time.Minute).UTC().Format(time.RFC3339Nano)))),
		at(prepareRec("shop", "cancelled", nil, hdr(envelope.HeaderDelay, "60000"))),
	)
	e.produce(bad...)
	e.produce(decisionRec("shop", "delay", "commit"), decisionRec("shop", "at", "commit"),
		decisionRec("shop", "cancelled", "commit"), decisionRec("shop", "cancelled", "cancel"))
	require.Eventually(t, e.committedAll, waitFor, tick)

	m, ok := st.get("shop", "delay")
	require.True(t, ok)
	require.True(t, ts.Add(time.Minute).Equal(m.DeliverAt), "got %v", m.DeliverAt)
	require.True(t, m.Sendable())
	require.True(t, m.SendNextAt.Equal(m.DeliverAt))
	m, _ = st.get("shop", "at")
	require.True(t, ts.Add(30*time.Minute).Equal(m.DeliverAt))
	m, _ = st.get("shop", "cancelled")
	require.Equal(t, state.Cancelled, m.Status)
	require.Zero(t, fwd.len(), "nothing due yet: nothing handed over")
	for _, k := range []string{"past", "far", "far-delay"} {
		_, ok := st.get("shop", k)
		require.False(t, ok, k)
	}

	dead := e.readDLQ(len(bad))
	require.Len(t, dead, len(bad))
	for i, want := range []string{envelope.HeaderDeliverAt, envelope.HeaderDeliverAt, envelope.HeaderDelay} {
		var reason string
		for _, h := range dead[i].Headers {
			if h.Key == envelope.HeaderDLQReason {
				reason = string(h.Value)
			}
		}
		require.Contains(t, reason, want, "dead letter %d", i)
	}
	require.InDelta(t, 2, testutil.ToFloat64(in.met.dlq.WithLabelValues(envelope.HeaderDeliverAt)), 0)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlq.WithLabelValues(envelope.HeaderDelay)), 0)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.envelopes.WithLabelValues("cancel", resultApplied)), 0)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.cancels.WithLabelValues(cancelCancelled)), 0)

	// A second cancel is a no-op; a cancel of a sent message is too late.
	_, err := st.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{
		{BizID: "shop", Key: "sent", Event: state.Event{Kind: state.KindPrepare, At: ts, Body: &state.Body{Topic: "t"}}},
		{BizID: "shop", Key: "sent", Event: state.Event{Kind: state.KindCommit, At: ts}},
		{BizID: "shop", Key: "sent", Event: state.Event{Kind: state.KindSent, At: ts}},
	}})
	require.NoError(t, err)
	e.produce(decisionRec("shop", "cancelled", "cancel"), decisionRec("shop", "sent", "cancel"))
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(in.met.cancels.WithLabelValues(cancelTooLate)) == 1 &&
			testutil.ToFloat64(in.met.cancels.WithLabelValues(cancelNoop)) == 1
	}, waitFor, tick)
	m, _ = st.get("shop", "sent")
	require.Equal(t, state.SendSent, m.SendStatus)
	require.Equal(t, 1, m.Conflicts)
}

// TestScheduleRefusedWhileSchedulingIsOff: while Config.Scheduling says
// off (an older center is live), a scheduled PREPARE is dead-lettered with
// the reason it gives and nothing is stored; an unscheduled one is stored
// as usual. ChangeOf says the same.
func TestScheduleRefusedWhileSchedulingIsOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	st, fwd := newMemStore(), &handoffs{}
	cfg := e.config()
	var off atomic.Bool
	off.Store(true)
	cfg.Scheduling = func() (bool, string) {
		if off.Load() {
			return false, "scheduled delivery is off for this test"
		}
		return true, ""
	}
	in := e.start(cfg, st, fwd, NewOwnership())

	hdr := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
	e.produce(prepareRec("shop", "delay", nil, hdr(envelope.HeaderDelay, "60000")),
		prepareRec("shop", "at", nil, hdr(envelope.HeaderDeliverAt, strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10))),
		prepareRec("shop", "plain", nil))
	require.Eventually(t, e.committedAll, waitFor, tick)
	_, ok := st.get("shop", "plain")
	require.True(t, ok)
	for _, k := range []string{"delay", "at"} {
		_, ok := st.get("shop", k)
		require.False(t, ok, k)
	}
	dead := e.readDLQ(2)
	require.Len(t, dead, 2)
	for _, d := range dead {
		var reason string
		for _, h := range d.Headers {
			if h.Key == envelope.HeaderDLQReason {
				reason = string(h.Value)
			}
		}
		require.Contains(t, reason, "scheduled delivery is off for this test")
	}
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlq.WithLabelValues(envelope.HeaderDelay)), 0)
	require.InDelta(t, 1, testutil.ToFloat64(in.met.dlq.WithLabelValues(envelope.HeaderDeliverAt)), 0)

	now := time.Now()
	sched := envelope.Envelope{Type: envelope.Prepare, BizID: "shop", MessageKey: "k", ForwardTopic: "t", Delay: time.Minute}
	_, err := in.ChangeOf(sched, 0, now, now)
	require.ErrorIs(t, err, envelope.ErrInvalid)
	require.ErrorContains(t, err, "off for this test")
	off.Store(false)
	c, err := in.ChangeOf(sched, 3, now, now)
	require.NoError(t, err)
	require.Equal(t, int32(3), c.Partition)
	require.Equal(t, state.KindPrepare, c.Event.Kind)
	require.True(t, now.Add(time.Minute).Truncate(time.Millisecond).Equal(c.Event.Body.DeliverAt))
	_, err = in.ChangeOf(envelope.Envelope{Type: envelope.Prepare, BizID: "shop", MessageKey: "k", ForwardTopic: "t", Delay: 100 * 24 * time.Hour}, 0, now, now)
	require.ErrorContains(t, err, "forward.max_delay")
}
