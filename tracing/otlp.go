package tracing

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The OTLP exporter here is a small OTLP/HTTP JSON client (the OTLP spec's
// JSON encoding of ExportTraceServiceRequest), written on the standard
// library because the upstream otlptracehttp module pulls in gRPC,
// grpc-gateway, genproto and the OTLP protobuf types. Every OpenTelemetry
// Collector and most back ends accept OTLP/HTTP JSON on port 4318.

type otlpConfig struct {
	endpoint string
	headers  map[string]string
	timeout  time.Duration
}

func otlpConfigFromEnv(getenv func(string) string) (otlpConfig, error) {
	pick := func(traces, generic string) string {
		if v := getenv(traces); v != "" {
			return v
		}
		return getenv(generic)
	}
	switch p := pick("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"); p {
	case "", "http/json":
	default:
		return otlpConfig{}, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: this build exports OTLP over http/json only", p)
	}
	cfg := otlpConfig{endpoint: "http://localhost:4318/v1/traces", timeout: 10 * time.Second, headers: map[string]string{}}
	if v := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		cfg.endpoint = v // used as is
	} else if v := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		cfg.endpoint = strings.TrimSuffix(v, "/") + "/v1/traces"
	}
	if u, err := url.Parse(cfg.endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return otlpConfig{}, fmt.Errorf("OTLP traces endpoint %q: want an http(s) URL", cfg.endpoint)
	}
	if v := pick("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"); v != "" {
		for kv := range strings.SplitSeq(v, ",") {
			k, val, ok := strings.Cut(kv, "=")
			if !ok {
				return otlpConfig{}, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %q is not key=value", kv)
			}
			k, err1 := url.QueryUnescape(strings.TrimSpace(k))
			val, err2 := url.QueryUnescape(strings.TrimSpace(val))
			if err1 != nil || err2 != nil || k == "" {
				return otlpConfig{}, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: bad entry %q", kv)
			}
			cfg.headers[k] = val
		}
	}
	if v := pick("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return otlpConfig{}, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=%q: want milliseconds", v)
		}
		cfg.timeout = time.Duration(ms) * time.Millisecond
	}
	return cfg, nil
}

type otlpExporter struct {
	cfg    otlpConfig
	res    *resource.Resource
	client *http.Client
}

func newOTLPExporter(cfg otlpConfig, res *resource.Resource) *otlpExporter {
	return &otlpExporter{cfg: cfg, res: res, client: &http.Client{Timeout: cfg.timeout}}
}

// ExportSpans posts spans as one OTLP JSON request.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := json.Marshal(otlpRequest(e.res, spans))
	if err != nil {
		return fmt.Errorf("otlp: encode %d spans: %w", len(spans), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range e.cfg.headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: export %d spans: %w", len(spans), err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp: export %d spans: HTTP %d: %s", len(spans), resp.StatusCode, bytes.TrimSpace(b))
	}
	return nil
}

// Shutdown closes idle connections.
func (e *otlpExporter) Shutdown(context.Context) error {
	e.client.CloseIdleConnections()
	return nil
}

type jsonMap = map[string]any

func otlpRequest(res *resource.Resource, spans []sdktrace.ReadOnlySpan) jsonMap {
	byScope := map[string][]any{}
	var scopes []string
	for _, s := range spans {
		name := s.InstrumentationScope().Name
		if _, ok := byScope[name]; !ok {
			scopes = append(scopes, name)
		}
		byScope[name] = append(byScope[name], otlpSpan(s))
	}
	var scopeSpans []any
	for _, name := range scopes {
		scopeSpans = append(scopeSpans, jsonMap{"scope": jsonMap{"name": name}, "spans": byScope[name]})
	}
	return jsonMap{"resourceSpans": []any{jsonMap{
		"resource":   jsonMap{"attributes": otlpAttributes(res.Attributes())},
		"scopeSpans": scopeSpans,
	}}}
}

func otlpSpan(s sdktrace.ReadOnlySpan) jsonMap {
	sc := s.SpanContext()
	m := jsonMap{
		"traceId":           hexID(sc.TraceID()),
		"spanId":            hexSpan(sc.SpanID()),
		"name":              s.Name(),
		"kind":              otlpKind(s.SpanKind()),
		"startTimeUnixNano": strconv.FormatInt(s.StartTime().UnixNano(), 10),
		"endTimeUnixNano":   strconv.FormatInt(s.EndTime().UnixNano(), 10),
		"attributes":        otlpAttributes(s.Attributes()),
	}
	if ts := sc.TraceState().String(); ts != "" {
		m["traceState"] = ts
	}
	if p := s.Parent(); p.IsValid() {
		m["parentSpanId"] = hexSpan(p.SpanID())
	}
	if links := s.Links(); len(links) > 0 {
		var ls []any
		for _, l := range links {
			ls = append(ls, jsonMap{"traceId": hexID(l.SpanContext.TraceID()), "spanId": hexSpan(l.SpanContext.SpanID()), "attributes": otlpAttributes(l.Attributes)})
		}
		m["links"] = ls
	}
	switch st := s.Status(); st.Code {
	case codes.Error:
		m["status"] = jsonMap{"code": 2, "message": st.Description}
	case codes.Ok:
		m["status"] = jsonMap{"code": 1}
	}
	return m
}

func hexID(id trace.TraceID) string  { return hex.EncodeToString(id[:]) }
func hexSpan(id trace.SpanID) string { return hex.EncodeToString(id[:]) }

// otlpKind maps to OTLP's SpanKind enum (internal 1 ... consumer 5).
func otlpKind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal:
		return 1
	case trace.SpanKindServer:
		return 2
	case trace.SpanKindClient:
		return 3
	case trace.SpanKindProducer:
		return 4
	case trace.SpanKindConsumer:
		return 5
	}
	return 0
}

func otlpAttributes(kvs []attribute.KeyValue) []any {
	out := make([]any, 0, len(kvs))
	for _, kv := range kvs {
		var v jsonMap
		switch kv.Value.Type() {
		case attribute.BOOL:
			v = jsonMap{"boolValue": kv.Value.AsBool()}
		case attribute.INT64:
			v = jsonMap{"intValue": strconv.FormatInt(kv.Value.AsInt64(), 10)}
		case attribute.FLOAT64:
			v = jsonMap{"doubleValue": kv.Value.AsFloat64()}
		default:
			v = jsonMap{"stringValue": kv.Value.String()}
		}
		out = append(out, jsonMap{"key": string(kv.Key), "value": v})
	}
	return out
}
