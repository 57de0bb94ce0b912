package clientlib

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventcenter/eventcenter/envelope"
)

// Trace context headers (W3C Trace Context). The producer sends them as
// forwarded headers (ec-h-traceparent, ec-h-tracestate in the PREPARE), so
// the center stores them with the message, links its spans to the
// producer's trace, and forwards traceparent to the consumer.
const (
	HeaderTraceparent = "traceparent"
	HeaderTracestate  = "tracestate"
)

// headerCarrier adapts forwarded headers to a TextMapCarrier.
type headerCarrier struct{ hs *[]Header }

func (c headerCarrier) Get(key string) string {
	for _, h := range *c.hs {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func (c headerCarrier) Set(key, value string) {
	*c.hs = append(*c.hs, Header{Key: key, Value: []byte(value)})
}

func (c headerCarrier) Keys() []string {
	keys := make([]string, len(*c.hs))
	for i, h := range *c.hs {
		keys[i] = h.Key
	}
	return keys
}

// withTraceContext returns hs with the W3C trace context of ctx's span
// appended (traceparent, and tracestate if any). hs is returned unchanged
// when ctx has no valid span, when hs already has a traceparent (the
// producer chose its own), or when there is no room left under
// envelope.MaxHeaders. hs itself is never modified.
func withTraceContext(ctx context.Context, hs []Header) []Header {
	if !trace.SpanContextFromContext(ctx).IsValid() || len(hs)+2 > envelope.MaxHeaders {
		return hs
	}
	for _, h := range hs {
		if h.Key == HeaderTraceparent {
			return hs
		}
	}
	out := make([]Header, len(hs), len(hs)+2)
	copy(out, hs)
	propagation.TraceContext{}.Inject(ctx, headerCarrier{&out})
	return out
}

// recordCarrier adapts a Kafka record's headers to a TextMapCarrier.
type recordCarrier struct{ r *kgo.Record }

func (c recordCarrier) Get(key string) string {
	for _, h := range c.r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func (c recordCarrier) Set(string, string) {} // extraction only

func (c recordCarrier) Keys() []string {
	keys := make([]string, len(c.r.Headers))
	for i, h := range c.r.Headers {
		keys[i] = h.Key
	}
	return keys
}

// RecordContext returns ctx with the remote span context of a forwarded
// record's traceparent/tracestate headers (the center's forward span, or
// the producer's span when the center does not trace), so that a span the
// consumer starts from it continues the producer's trace:
//
//	ctx, span := tracer.Start(clientlib.RecordContext(ctx, r), "consume",
//		trace.WithSpanKind(trace.SpanKindConsumer))
//
// ctx is returned unchanged if the record has no valid traceparent.
func RecordContext(ctx context.Context, r *kgo.Record) context.Context {
	return propagation.TraceContext{}.Extract(ctx, recordCarrier{r})
}
