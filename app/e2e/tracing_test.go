package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventcenter/eventcenter/app/center"
	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/tracing"
)

// TestOneMessageOneTrace: a producer span sends a PREPARE and "dies"
// before COMMIT; the center ingests it, checks back (the producer answers
// commit), forwards it, and a consumer continues from the forwarded
// traceparent. Every span, the check-back request and the forwarded
// record are in the producer's trace, each span the child it should be.
func TestOneMessageOneTrace(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	var mu sync.Mutex
	var checkTraceparent string
	answer := clientlib.NewCheckbackHandler(func(context.Context, string, string) (clientlib.Decision, error) {
		return clientlib.DecisionCommit, nil
	})
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		checkTraceparent = r.Header.Get("traceparent")
		mu.Unlock()
		answer.ServeHTTP(w, r)
	}))
	t.Cleanup(cb.Close)

	e := newEnv(t, "sqlite", func(c *config.Config) {
		c.Checkback.FirstDelay = 100 * time.Millisecond
		c.Checkback.BackoffBase = 100 * time.Millisecond
		c.Checkback.Allow = []string{cb.URL}
	})
	e.startCenter(center.Options{TracerProvider: tp})
	col := e.collect(businessTopic)
	p, err := clientlib.NewProducer(clientlib.WithBrokers(e.brokers...), clientlib.WithControlTopic(controlTopic))
	require.NoError(t, err)
	defer p.Close()

	ctx, producerSpan := tp.Tracer("producer").Start(t.Context(), "order.create")
	require.NoError(t, p.Prepare(ctx, clientlib.Message{
		BizID: "orders", Key: "traced", Payload: []byte("p"), ForwardTopic: businessTopic, Verify: cb.URL + "/checkback",
	}))
	producerSpan.End() // no COMMIT: the center asks back
	id := msgID("orders", "traced")
	col.waitFor(t, []string{id}, time.Minute)

	f := col.get(id)[0]
	cctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier(f.Headers))
	_, consumerSpan := tp.Tracer("consumer").Start(cctx, "order.consume", trace.WithSpanKind(trace.SpanKindConsumer))
	consumerSpan.End()

	byName := func() map[string][]sdktrace.ReadOnlySpan {
		m := map[string][]sdktrace.ReadOnlySpan{}
		for _, s := range rec.Ended() {
			m[s.Name()] = append(m[s.Name()], s)
		}
		return m
	}
	// The forward span ends when the send is acknowledged, which may be
	// just after the consumer read the record.
	require.Eventually(t, func() bool {
		m := byName()
		return len(m[tracing.SpanForward]) > 0 && len(m[tracing.SpanIngest]) > 0 && len(m[tracing.SpanCheckback]) > 0
	}, 10*time.Second, 10*time.Millisecond)

	m := byName()
	root := producerSpan.SpanContext()
	for _, s := range rec.Ended() {
		require.Equal(t, root.TraceID(), s.SpanContext().TraceID(), "span %s is in another trace", s.Name())
	}
	for _, name := range []string{tracing.SpanIngest, tracing.SpanCheckback, tracing.SpanForward} {
		for _, s := range m[name] {
			require.Equal(t, root.SpanID(), s.Parent().SpanID(), "%s is a child of the producer's span", name)
		}
	}
	fwd := m[tracing.SpanForward][len(m[tracing.SpanForward])-1]
	require.Equal(t, fwd.SpanContext().SpanID(), consumerSpan.(sdktrace.ReadOnlySpan).Parent().SpanID(), "the consumer continues from the forward span")

	mu.Lock()
	got := checkTraceparent
	mu.Unlock()
	cbSpan := m[tracing.SpanCheckback][0].SpanContext()
	require.Equal(t, "00-"+cbSpan.TraceID().String()+"-"+cbSpan.SpanID().String()+"-01", got, "the check-back request carries the check-back span")
}
