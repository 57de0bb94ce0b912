package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	rmqforwarder "github.com/eventcenter/eventcenter/forwarder/rocketmq"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

const producerTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	t.Parallel()
	for _, off := range []map[string]string{
		{},
		{"OTEL_TRACES_EXPORTER": "none"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"},
	} {
		tp, err := FromEnv(env(off))
		require.NoError(t, err)
		require.Nil(t, tp, "tracing is off by default: %v", off)
	}
	for name, bad := range map[string]map[string]string{
		"exporter":  {"OTEL_TRACES_EXPORTER": "zipkin"},
		"protocol":  {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"endpoint":  {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
		"headers":   {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
		"timeout":   {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TIMEOUT": "soon"},
		"escaping":  {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "a=%zz"},
		"emptyname": {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "=v"},
	} {
		_, err := FromEnv(env(bad))
		require.Error(t, err, name)
	}
}

// Spans reach an OTLP/HTTP JSON endpoint with the configured path,
// headers, resource and parent links.
func TestOTLPExport(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []map[string]any
	var auth, ctype, path string
	fail := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		mu.Lock()
		defer mu.Unlock()
		auth, ctype, path = r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.URL.Path
		bodies = append(bodies, m)
		if fail {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	tp, err := FromEnv(env(map[string]string{
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL + "/",
		"OTEL_EXPORTER_OTLP_HEADERS":  "Authorization=Bearer%20x",
		"OTEL_EXPORTER_OTLP_TIMEOUT":  "5000",
	}))
	require.NoError(t, err)
	ctx := FromHeaders(t.Context(), []envelope.Header{{Key: HeaderTraceparent, Value: []byte(producerTP)}})
	_, sp := Tracer(tp).Start(ctx, SpanForward, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(AttrBatchSize.Int(3)))
	sp.SetStatus(codes.Error, "boom")
	sp.End()
	require.NoError(t, tp.ForceFlush(t.Context()))

	mu.Lock()
	require.Len(t, bodies, 1)
	require.Equal(t, "Bearer x", auth)
	require.Equal(t, "application/json", ctype)
	require.Equal(t, "/v1/traces", path)
	rs := bodies[0]["resourceSpans"].([]any)[0].(map[string]any)
	require.Contains(t, mustJSON(t, rs["resource"]), `"service.name"`)
	require.Contains(t, mustJSON(t, rs["resource"]), `"eventcenter"`)
	span := rs["scopeSpans"].([]any)[0].(map[string]any)["spans"].([]any)[0].(map[string]any)
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", span["traceId"])
	require.Equal(t, "00f067aa0ba902b7", span["parentSpanId"])
	require.Equal(t, SpanForward, span["name"])
	require.EqualValues(t, 4, span["kind"])
	require.EqualValues(t, 2, span["status"].(map[string]any)["code"])
	require.Contains(t, mustJSON(t, span["attributes"]), `{"key":"eventcenter.batch_size","value":{"intValue":"3"}}`)
	fail = true
	mu.Unlock()

	// A collector that refuses: the export error is reported, not hidden.
	exp := newOTLPExporter(otlpConfig{endpoint: srv.URL + "/v1/traces", timeout: 5e9}, nil)
	rec := tracetest.NewSpanRecorder()
	tp2 := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, s2 := tp2.Tracer("x").Start(t.Context(), "s")
	s2.End()
	exp.res = nil
	err = exp.ExportSpans(t.Context(), rec.Ended())
	require.ErrorContains(t, err, "HTTP 503")
	require.NoError(t, exp.Shutdown(t.Context()))
	require.NoError(t, tp.Shutdown(t.Context()))
	require.NoError(t, tp2.Shutdown(t.Context()))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
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
