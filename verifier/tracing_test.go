package verifier

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/envelope/checkback"
	"github.com/eventcenter/eventcenter/state"
)

// A check-back request carries the W3C traceparent: the producer's (from
// the message's headers) when tracing is off, the check-back span's when
// it is on; none for a message without one.
func TestCheckbackCarriesTraceparent(t *testing.T) {
	t.Parallel()
	const producerTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	p := newProducer(t, replying(checkback.DecisionCommit))
	c := testCaller(t, time.Now)
	ep, err := checkback.ParseEndpoint(p.endpoint("http", "/cb"))
	require.NoError(t, err)
	traced := &state.Message{BizID: "b", Key: "k", Headers: []envelope.Header{{Key: "traceparent", Value: []byte(producerTP)}}}

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	for _, v := range []*Verifier{{}, {cfg: Config{TracerProvider: tp}}} {
		for _, m := range []*state.Message{traced, {BizID: "b", Key: "plain"}} {
			ctx, end := v.checkSpan(t.Context(), m, ep, 1)
			a := c.do(ctx, call{ep: ep, bizID: m.BizID, key: m.Key, attempt: 1, timeout: 2 * time.Second})
			require.NoError(t, a.Err)
			end(a)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Len(t, p.reqs, 4)
	require.Equal(t, producerTP, p.reqs[0].Header.Get("traceparent"), "tracing off: the producer's")
	require.Empty(t, p.reqs[1].Header.Get("traceparent"))

	spans := rec.Ended()
	require.Len(t, spans, 2)
	sc := spans[0].SpanContext()
	require.Equal(t, "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01", p.reqs[2].Header.Get("traceparent"))
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", spans[0].Parent().SpanID().String())
	require.False(t, spans[1].Parent().IsValid(), "a message without trace context starts a trace")
}
