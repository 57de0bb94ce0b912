package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventcenter/eventcenter/envelope"
)

// ScopeName is the instrumentation scope of the center's spans.
const ScopeName = "github.com/eventcenter/eventcenter"

// Header names of the W3C trace context.
const (
	HeaderTraceparent = "traceparent"
	HeaderTracestate  = "tracestate"
)

// Headers adapts forwarded headers to a propagation.TextMapCarrier. Set
// replaces an existing header of that name.
type Headers struct{ H *[]envelope.Header }

// Get returns the value of key, or "".
func (c Headers) Get(key string) string {
	for _, h := range *c.H {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Set sets key to value.
func (c Headers) Set(key, value string) {
	for i := range *c.H {
		if (*c.H)[i].Key == key {
			(*c.H)[i].Value = []byte(value)
			return
		}
	}
	*c.H = append(*c.H, envelope.Header{Key: key, Value: []byte(value)})
}

// Keys returns the header names.
func (c Headers) Keys() []string {
	keys := make([]string, len(*c.H))
	for i, h := range *c.H {
		keys[i] = h.Key
	}
	return keys
}

var propagator = propagation.TraceContext{}

// FromHeaders returns ctx with the remote span context of headers'
// traceparent/tracestate, if they hold a valid one.
func FromHeaders(ctx context.Context, headers []envelope.Header) context.Context {
	return propagator.Extract(ctx, Headers{&headers})
}

// TraceHeaders returns the traceparent and tracestate headers of hs (a
// new slice, nil if there are none), for holders that drop the rest.
func TraceHeaders(hs []envelope.Header) []envelope.Header {
	var out []envelope.Header
	for _, h := range hs {
		if h.Key == HeaderTraceparent || h.Key == HeaderTracestate {
			out = append(out, h)
		}
	}
	return out
}

// TraceID returns the trace id (32 hex digits) of headers' traceparent, or
// "" if they have no valid one. The console shows it.
func TraceID(headers []envelope.Header) string {
	sc := trace.SpanContextFromContext(FromHeaders(context.Background(), headers))
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// Provider is a tracer provider that can flush its spans.
type Provider interface {
	trace.TracerProvider
	// ForceFlush exports the spans ended so far.
	ForceFlush(ctx context.Context) error
	// Shutdown flushes and stops.
	Shutdown(ctx context.Context) error
}

// FromEnv builds the center's tracer provider from the standard
// OpenTelemetry variables of the process. It returns nil (tracing off,
// nothing wrapped) unless OTEL_TRACES_EXPORTER is "otlp" and
// OTEL_SDK_DISABLED is not "true". The exporter is OpenTelemetry's OTLP
// exporter: over HTTP with protobuf bodies by default, over gRPC with
// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL=grpc; it reads the other
// OTEL_EXPORTER_OTLP_* variables itself (endpoint, default
// http://localhost:4318 or :4317, headers, timeout, compression,
// certificates). The SDK reads OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_*.
func FromEnv(ctx context.Context) (Provider, error) {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	switch exp := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "", "none":
		return nil, nil
	case "otlp":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: this build exports traces with otlp only (or none)", exp)
	}
	res := resource.Default() // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
	if os.Getenv("OTEL_SERVICE_NAME") == "" && !strings.Contains(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		merged, err := resource.Merge(res, resource.NewSchemaless(attribute.String("service.name", "eventcenter")))
		if err != nil {
			return nil, fmt.Errorf("tracing resource: %w", err)
		}
		res = merged
	}
	exp, err := newExporter(ctx)
	if err != nil {
		return nil, err
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
	), nil
}

// Tracer returns the center's tracer of tp.
func Tracer(tp trace.TracerProvider) trace.Tracer { return tp.Tracer(ScopeName) }
