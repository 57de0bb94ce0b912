package clientlib_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope"
)

func spanContext(t *testing.T, state string) context.Context {
	t.Helper()
	ts, err := trace.ParseTraceState(state)
	require.NoError(t, err)
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
	})
	return trace.ContextWithSpanContext(t.Context(), sc)
}

func header(e envelope.Envelope, key string) (string, bool) {
	for _, h := range e.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// The producer's span goes with the PREPARE as forwarded headers (stored
// and forwarded by the center); COMMIT carries none.
func TestPrepareCarriesTraceContext(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	p := newProducer(t, c)
	ctx := spanContext(t, "vendor=x")
	m := message("k1")
	m.Headers = []clientlib.Header{{Key: "a", Value: []byte("b")}}
	require.NoError(t, p.Prepare(ctx, m))
	require.NoError(t, p.Commit(ctx, m.BizID, m.Key))
	recs := readControl(t, c, 2)
	e := decode(t, recs[0])
	tp, ok := header(e, clientlib.HeaderTraceparent)
	require.True(t, ok, "PREPARE has ec-h-traceparent")
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tp)
	ts, _ := header(e, clientlib.HeaderTracestate)
	require.Equal(t, "vendor=x", ts)
	require.Len(t, m.Headers, 1, "the caller's headers are not modified")
	require.Empty(t, decode(t, recs[1]).Headers)
}

func TestPrepareTraceContextKeptOrSkipped(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	p := newProducer(t, c)
	// No span: no header.
	none := message("none")
	none.Headers = nil
	require.NoError(t, p.Prepare(t.Context(), none))
	// The producer's own traceparent wins.
	own := message("own")
	own.Headers = []clientlib.Header{{Key: clientlib.HeaderTraceparent, Value: []byte("00-11111111111111111111111111111111-2222222222222222-01")}}
	require.NoError(t, p.Prepare(spanContext(t, ""), own))
	// No room under MaxHeaders: sent without (rather than refused).
	full := message("full")
	full.Headers = nil
	for i := range envelope.MaxHeaders - 1 {
		full.Headers = append(full.Headers, clientlib.Header{Key: "h" + strconv.Itoa(i), Value: []byte("v")})
	}
	require.NoError(t, p.Prepare(spanContext(t, ""), full))

	recs := readControl(t, c, 3)
	_, ok := header(decode(t, recs[0]), clientlib.HeaderTraceparent)
	require.False(t, ok)
	tp, _ := header(decode(t, recs[1]), clientlib.HeaderTraceparent)
	require.Equal(t, "00-11111111111111111111111111111111-2222222222222222-01", tp)
	e := decode(t, recs[2])
	require.Len(t, e.Headers, envelope.MaxHeaders-1)
}

func TestRecordContext(t *testing.T) {
	t.Parallel()
	r := &kgo.Record{Headers: []kgo.RecordHeader{{Key: "ec-id", Value: []byte("b:k")}, {Key: "traceparent", Value: []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}}}
	sc := trace.SpanContextFromContext(clientlib.RecordContext(t.Context(), r))
	require.True(t, sc.IsRemote())
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", sc.SpanID().String())
	require.False(t, trace.SpanContextFromContext(clientlib.RecordContext(t.Context(), &kgo.Record{})).IsValid())
}
