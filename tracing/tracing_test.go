package tracing

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	rmqforwarder "github.com/eventcenter/eventcenter/forwarder/rocketmq"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

const producerTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// otelEnv sets the variables for the test; tests using it are not
// parallel (the exporters read the process environment).
func otelEnv(t *testing.T, m map[string]string) {
	t.Helper()
	for _, k := range []string{
		"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
	} {
		t.Setenv(k, m[k])
	}
}

func TestFromEnv(t *testing.T) {
	for _, off := range []map[string]string{
		{},
		{"OTEL_TRACES_EXPORTER": "none"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"},
	} {
		otelEnv(t, off)
		tp, err := FromEnv(t.Context())
		require.NoError(t, err)
		require.Nil(t, tp, "tracing is off by default: %v", off)
	}
	for name, bad := range map[string]map[string]string{
		"exporter":  {"OTEL_TRACES_EXPORTER": "zipkin"},
		"protocol":  {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"},
		"json":      {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
		"endpoint":  {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
		"traces":    {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://"},
		"headers":   {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
		"timeout":   {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TIMEOUT": "soon"},
		"escaping":  {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "a=%zz"},
		"emptyname": {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "=v"},
	} {
		otelEnv(t, bad)
		_, err := FromEnv(t.Context())
		require.Error(t, err, name)
	}
}

// collector is an OTLP/HTTP collector stand-in: it decodes each request
// as the protobuf ExportTraceServiceRequest it must be (gzip-compressed
// when the exporter says so) and answers status (0: 200 with an
// ExportTraceServiceResponse).
type collector struct {
	mu       sync.Mutex
	requests []*coltracepb.ExportTraceServiceRequest
	headers  []http.Header
	paths    []string
	status   int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		http.Error(w, "not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.requests = append(c.requests, req)
	c.headers = append(c.headers, r.Header.Clone())
	c.paths = append(c.paths, r.URL.Path)
	status := c.status
	c.mu.Unlock()
	if status != 0 {
		http.Error(w, "refused", status)
		return
	}
	out, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// exportOne ends one forward span, a child of the producer's, through a
// provider built by FromEnv, and flushes it.
func exportOne(t *testing.T) {
	t.Helper()
	tp, err := FromEnv(t.Context())
	require.NoError(t, err)
	require.NotNil(t, tp)
	ctx := FromHeaders(t.Context(), []envelope.Header{{Key: HeaderTraceparent, Value: []byte(producerTP)}})
	_, sp := Tracer(tp).Start(ctx, SpanForward, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(AttrBatchSize.Int(3)))
	sp.SetStatus(codes.Error, "boom")
	sp.End()
	require.NoError(t, tp.ForceFlush(t.Context()))
	require.NoError(t, tp.Shutdown(t.Context()))
}

// checkRequest checks the one span exportOne sent, as the collector
// decoded it.
func checkRequest(t *testing.T, req *coltracepb.ExportTraceServiceRequest) {
	t.Helper()
	require.Len(t, req.GetResourceSpans(), 1)
	rs := req.GetResourceSpans()[0]
	attrs := map[string]string{}
	for _, kv := range rs.GetResource().GetAttributes() {
		attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	require.Equal(t, "eventcenter", attrs["service.name"])
	require.Len(t, rs.GetScopeSpans(), 1)
	require.Equal(t, ScopeName, rs.GetScopeSpans()[0].GetScope().GetName())
	spans := rs.GetScopeSpans()[0].GetSpans()
	require.Len(t, spans, 1)
	span := spans[0]
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", hex.EncodeToString(span.GetTraceId()))
	require.Equal(t, "00f067aa0ba902b7", hex.EncodeToString(span.GetParentSpanId()))
	require.Len(t, span.GetSpanId(), 8)
	require.Equal(t, SpanForward, span.GetName())
	require.Equal(t, tracepb.Span_SPAN_KIND_PRODUCER, span.GetKind())
	require.Equal(t, tracepb.Status_STATUS_CODE_ERROR, span.GetStatus().GetCode())
	require.Equal(t, "boom", span.GetStatus().GetMessage())
	require.Len(t, span.GetAttributes(), 1)
	require.Equal(t, "eventcenter.batch_size", span.GetAttributes()[0].GetKey())
	require.Equal(t, int64(3), span.GetAttributes()[0].GetValue().GetIntValue())
	require.Positive(t, span.GetEndTimeUnixNano())
	require.GreaterOrEqual(t, span.GetEndTimeUnixNano(), span.GetStartTimeUnixNano())
}

// By default spans go over OTLP/HTTP as protobuf to OTEL_EXPORTER_OTLP_ENDPOINT
// plus /v1/traces, with the headers, timeout and compression of the
// standard variables.
func TestOTLPExportHTTPProtobuf(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	otelEnv(t, map[string]string{
		"OTEL_TRACES_EXPORTER":           "otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT":    srv.URL + "/",
		"OTEL_EXPORTER_OTLP_HEADERS":     "Authorization=Bearer%20x,tenant=acme",
		"OTEL_EXPORTER_OTLP_TIMEOUT":     "5000",
		"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
	})
	exportOne(t)
	col.mu.Lock()
	defer col.mu.Unlock()
	require.Len(t, col.requests, 1)
	require.Equal(t, "/v1/traces", col.paths[0])
	require.Equal(t, "application/x-protobuf", col.headers[0].Get("Content-Type"))
	require.Equal(t, "gzip", col.headers[0].Get("Content-Encoding"))
	require.Equal(t, "Bearer x", col.headers[0].Get("Authorization"))
	require.Equal(t, "acme", col.headers[0].Get("tenant"))
	checkRequest(t, col.requests[0])
}

// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as it is, and a collector
// that refuses the export is reported, not hidden.
func TestOTLPExportTracesEndpointAndRefusal(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	otelEnv(t, map[string]string{
		"OTEL_TRACES_EXPORTER":               "otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL":        "http/protobuf",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/custom/traces",
	})
	exportOne(t)
	col.mu.Lock()
	require.Equal(t, []string{"/custom/traces"}, col.paths)
	checkRequest(t, col.requests[0])
	col.status = http.StatusBadRequest // not retried
	col.mu.Unlock()

	exp, err := newExporter(t.Context())
	require.NoError(t, err)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, s := tp.Tracer("x").Start(t.Context(), "s")
	s.End()
	err = exp.ExportSpans(t.Context(), rec.Ended())
	require.ErrorContains(t, err, "400")
	require.NoError(t, exp.Shutdown(t.Context()))
	require.NoError(t, tp.Shutdown(t.Context()))
}

// grpcCollector is an OTLP/gRPC collector stand-in.
type grpcCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu       sync.Mutex
	requests []*coltracepb.ExportTraceServiceRequest
	auth     []string
}

func (g *grpcCollector) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requests = append(g.requests, req)
	g.auth = append(g.auth, md.Get("authorization")...)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc sends the spans over OTLP/gRPC.
func TestOTLPExportGRPC(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	col := &grpcCollector{}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, col)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Stop()
		require.NoError(t, <-served)
	})
	otelEnv(t, map[string]string{
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + l.Addr().String(),
		"OTEL_EXPORTER_OTLP_HEADERS":  "Authorization=Bearer%20g",
	})
	exportOne(t)
	col.mu.Lock()
	defer col.mu.Unlock()
	require.Len(t, col.requests, 1)
	require.Equal(t, []string{"Bearer g"}, col.auth)
	checkRequest(t, col.requests[0])
}

func TestTraceIDAndHeaders(t *testing.T) {
	t.Parallel()
	hs := []envelope.Header{{Key: "a", Value: []byte("b")}, {Key: HeaderTraceparent, Value: []byte(producerTP)}, {Key: HeaderTracestate, Value: []byte("v=1")}}
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", TraceID(hs))
	require.Empty(t, TraceID(hs[:1]))
	require.Empty(t, TraceID([]envelope.Header{{Key: HeaderTraceparent, Value: []byte("garbage")}}))
	require.Equal(t, hs[1:], TraceHeaders(hs))
	require.Nil(t, TraceHeaders(hs[:1]))
}

type fakeTarget struct {
	got []forwarder.Record
	err error
}

func (f *fakeTarget) Send(_ context.Context, recs []forwarder.Record) []forwarder.Result {
	f.got = recs
	out := make([]forwarder.Result, len(recs))
	for i := range out {
		out[i] = forwarder.Result{Ref: "orders/0@1", Err: f.err}
	}
	return out
}

func (f *fakeTarget) Close() error { return nil }

func recorder(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return rec, tp
}

func TestTargetReplacesTraceparent(t *testing.T) {
	t.Parallel()
	rec, tp := recorder(t)
	next := &fakeTarget{}
	tg := Target("kafka", next, tp)
	in := []forwarder.Record{
		forwarder.BuildRecord(&state.Message{BizID: "b", Key: "1", Topic: "orders", Headers: []envelope.Header{{Key: HeaderTraceparent, Value: []byte(producerTP)}}}),
		forwarder.BuildRecord(&state.Message{BizID: "b", Key: "2", Topic: "orders"}),
	}
	res := tg.Send(t.Context(), in)
	require.Len(t, res, 2)
	require.Equal(t, producerTP, string(in[0].Headers[0].Value), "the caller's record is not modified")
	spans := rec.Ended()
	require.Len(t, spans, 2)
	// Child of the producer's span, and its traceparent goes out.
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", spans[0].SpanContext().TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", spans[0].Parent().SpanID().String())
	sent := FromHeaders(t.Context(), next.got[0].Headers)
	require.Equal(t, spans[0].SpanContext().SpanID(), trace.SpanContextFromContext(sent).SpanID())
	require.Len(t, next.got[0].Headers, 2, "traceparent replaced, not added")
	// Without one: a new trace, whose traceparent is added.
	require.False(t, spans[1].Parent().IsValid())
	require.Equal(t, spans[1].SpanContext().TraceID().String(), TraceID(next.got[1].Headers))
	require.NoError(t, tg.Close())

	next.err = errors.New("broker down")
	tg.Send(t.Context(), in[:1])
	failed := rec.Ended()[2]
	require.Equal(t, codes.Error, failed.Status().Code)
}

type fakeApplier struct {
	res store.ApplyResult
	err error
}

func (f *fakeApplier) Apply(_ context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	return f.res, f.err
}

func TestStoreSpansPerPrepare(t *testing.T) {
	t.Parallel()
	rec, tp := recorder(t)
	next := &fakeApplier{res: store.ApplyResult{Outcomes: make([]store.ChangeOutcome, 3)}}
	st := Store(next, tp)
	req := store.ApplyRequest{Changes: []store.Change{
		{BizID: "b", Key: "1", Event: state.Event{Kind: state.KindPrepare, Body: &state.Body{Headers: []envelope.Header{{Key: HeaderTraceparent, Value: []byte(producerTP)}}}}},
		{BizID: "b", Key: "1", Event: state.Event{Kind: state.KindCommit}},
		{BizID: "b", Key: "2", Event: state.Event{Kind: state.KindPrepare, Body: &state.Body{}}},
	}}
	_, err := st.Apply(t.Context(), req)
	require.NoError(t, err)
	spans := rec.Ended()
	require.Len(t, spans, 2, "one span per PREPARE")
	require.Equal(t, "00f067aa0ba902b7", spans[0].Parent().SpanID().String())
	require.Equal(t, codes.Unset, spans[0].Status().Code)

	next.res.Outcomes[2].Err = errors.New("rejected")
	_, err = st.Apply(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, codes.Unset, rec.Ended()[2].Status().Code)
	require.Equal(t, codes.Error, rec.Ended()[3].Status().Code)

	next.err = errors.New("db down")
	_, err = st.Apply(t.Context(), req)
	require.ErrorIs(t, err, next.err)
	require.Equal(t, codes.Error, rec.Ended()[4].Status().Code)
}

// On a RocketMQ target the forward span's traceparent becomes a message
// property, as every forwarded header does.
func TestTargetTraceparentIsARocketMQProperty(t *testing.T) {
	t.Parallel()
	rec, tp := recorder(t)
	next := &fakeTarget{}
	r := forwarder.BuildRecord(&state.Message{BizID: "b", Key: "1", Topic: "orders", Headers: []envelope.Header{{Key: HeaderTraceparent, Value: []byte(producerTP)}}})
	Target("rmq", next, tp).Send(t.Context(), []forwarder.Record{r})
	m, err := rmqforwarder.Message(&next.got[0])
	require.NoError(t, err)
	sc := rec.Ended()[0].SpanContext()
	require.Equal(t, "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01", m.GetProperty(HeaderTraceparent))
}
