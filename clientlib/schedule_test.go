package clientlib_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
)

// DeliverAt and Delay go on the wire rounded up to whole milliseconds;
// both at once is refused before anything is produced; Cancel sends a
// cancel envelope.
func TestScheduleAndCancelWireFormat(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	p := newProducer(t, c)
	ctx := t.Context()
	at := time.Date(2030, 1, 2, 3, 4, 5, 1_000_001, time.FixedZone("x", 3600))
	m := clientlib.Message{BizID: "order", Key: "at", ForwardTopic: "t", DeliverAt: at}
	require.NoError(t, p.Prepare(ctx, m))
	m = clientlib.Message{BizID: "order", Key: "delay", ForwardTopic: "t", Delay: 30*time.Minute + time.Microsecond}
	require.NoError(t, p.Prepare(ctx, m))
	require.NoError(t, p.Cancel(ctx, "order", "at"))

	both := clientlib.Message{BizID: "order", Key: "both", ForwardTopic: "t", DeliverAt: at, Delay: time.Second}
	require.ErrorIs(t, p.Prepare(ctx, both), envelope.ErrInvalid)
	require.ErrorIs(t, p.Cancel(ctx, "order", ""), envelope.ErrInvalid)

	recs := readControl(t, c, 3)
	e := decode(t, recs[0])
	require.True(t, e.DeliverAt.Equal(time.Date(2030, 1, 2, 2, 4, 5, 2_000_000, time.UTC)), "rounded up: %v", e.DeliverAt)
	require.Equal(t, 30*time.Minute+time.Millisecond, decode(t, recs[1]).Delay)
	require.Equal(t, envelope.Envelope{Type: envelope.Cancel, BizID: "order", MessageKey: "at"}, decode(t, recs[2]))
}
