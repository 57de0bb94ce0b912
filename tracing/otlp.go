package tracing

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The exporter is OpenTelemetry's own: otlptracehttp (OTLP/HTTP with
// protobuf bodies, the default) or otlptracegrpc, as
// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL says. Each reads every other
// OTEL_EXPORTER_OTLP_* variable itself (endpoint, headers, timeout,
// compression, certificates, insecure). OpenTelemetry's Go exporters do
// not speak http/json, so that protocol is refused at start-up rather
// than ignored.

// Protocols of OTEL_EXPORTER_OTLP_PROTOCOL.
const (
	protoHTTPProtobuf = "http/protobuf"
	protoGRPC         = "grpc"
	protoHTTPJSON     = "http/json"
)

// pick returns the traces-specific variable, or the generic one.
func pick(traces, generic string) string {
	if v := os.Getenv(traces); v != "" {
		return v
	}
	return os.Getenv(generic)
}

// newExporter returns the exporter the OTEL_* variables ask for.
func newExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	proto := strings.TrimSpace(pick("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"))
	switch proto {
	case "", protoHTTPProtobuf, protoGRPC:
	case protoHTTPJSON:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: OpenTelemetry's Go exporter speaks %s and %s only (collectors take %s on the same port, 4318)",
			proto, protoHTTPProtobuf, protoGRPC, protoHTTPProtobuf)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want %s (the default) or %s", proto, protoHTTPProtobuf, protoGRPC)
	}
	if err := checkOTLPEnv(); err != nil {
		return nil, err
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	if proto == protoGRPC {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp %s trace exporter: %w", cmpOr(proto, protoHTTPProtobuf), err)
	}
	return exp, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// checkOTLPEnv refuses the values the exporters would pass over with a
// log line and replace by their defaults (or, for an endpoint without a
// scheme, keep and fail at every export): a center misconfigured this way
// must not start and silently lose its traces.
func checkOTLPEnv() error {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s=%q: want an http(s) URL such as http://collector:4318", name, v)
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		for kv := range strings.SplitSeq(v, ",") {
			k, val, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("%s: %q is not key=value", name, kv)
			}
			k, err1 := url.PathUnescape(strings.TrimSpace(k))
			_, err2 := url.PathUnescape(strings.TrimSpace(val))
			if err1 != nil || err2 != nil || k == "" {
				return fmt.Errorf("%s: bad entry %q (names and values are URL-encoded)", name, kv)
			}
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"} {
		if v := os.Getenv(name); v != "" {
			if ms, err := strconv.Atoi(v); err != nil || ms <= 0 {
				return fmt.Errorf("%s=%q: want milliseconds", name, v)
			}
		}
	}
	return nil
}
