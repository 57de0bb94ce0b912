package tracing

import (
	"context"
	"crypto/rand"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// DiscardProvider is a tracer provider that records every span and
// batch-exports it to nowhere: the center's tracing cost without a
// collector (eventcenter bench --tracing).
func DiscardProvider() Provider {
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
}

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// WithProducerSpan returns ctx with a new sampled remote span context, as
// a traced producer's would be, without a producer SDK's own cost.
func WithProducerSpan(ctx context.Context) context.Context {
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], b[:16])
	copy(sid[:], b[16:])
	return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true,
	}))
}
