package tracing

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/forwarder"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// Span attribute keys (span attributes may carry ids and topics: unlike
// metric labels they do not multiply time series).
const (
	AttrMessageID = attribute.Key("eventcenter.message_id")
	AttrTarget    = attribute.Key("eventcenter.target")
	AttrBatchSize = attribute.Key("eventcenter.batch_size")
	AttrRef       = attribute.Key("eventcenter.ref")
	AttrTopic     = attribute.Key("messaging.destination.name")
)

// Span names.
const (
	SpanIngest    = "eventcenter.ingest"
	SpanForward   = "eventcenter.forward"
	SpanCheckback = "eventcenter.checkback"
)

// Applier is the ingest path's store (ingest.Store).
type Applier interface {
	Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error)
}

type applier struct {
	next Applier
	tr   trace.Tracer
}

// Store wraps the ingest path's store: every PREPARE in a batch makes an
// "eventcenter.ingest" span, a child of the producer's span (from the
// PREPARE's traceparent header; a root span without one), that covers the
// store transaction the batch was applied in.
func Store(next Applier, tp trace.TracerProvider) Applier {
	return &applier{next: next, tr: Tracer(tp)}
}

func (a *applier) Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error) {
	var spans []trace.Span
	var idx []int
	for i := range req.Changes {
		c := &req.Changes[i]
		if c.Event.Kind != state.KindPrepare || c.Event.Body == nil {
			continue
		}
		_, sp := a.tr.Start(FromHeaders(ctx, c.Event.Body.Headers), SpanIngest,
			trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(AttrMessageID.String(envelope.Key(c.BizID, c.Key)), AttrBatchSize.Int(len(req.Changes))))
		spans = append(spans, sp)
		idx = append(idx, i)
	}
	res, err := a.next.Apply(ctx, req)
	for j, sp := range spans {
		switch {
		case err != nil:
			sp.RecordError(err)
			sp.SetStatus(codes.Error, "store apply failed")
		case idx[j] < len(res.Outcomes) && res.Outcomes[idx[j]].Err != nil:
			sp.RecordError(res.Outcomes[idx[j]].Err)
			sp.SetStatus(codes.Error, "change rejected")
		}
		sp.End()
	}
	return res, err
}

type target struct {
	name string
	next forwarder.Target
	tr   trace.Tracer
}

// Target wraps a forward target: every record sent makes an
// "eventcenter.forward" span (kind producer), a child of the producer's
// span (the record's traceparent header), and the record goes out with
// that span's traceparent instead, so the consumer's span is its child.
// The records passed in are not modified.
func Target(name string, next forwarder.Target, tp trace.TracerProvider) forwarder.Target {
	return &target{name: name, next: next, tr: Tracer(tp)}
}

func (t *target) Send(ctx context.Context, recs []forwarder.Record) []forwarder.Result {
	spans := make([]trace.Span, len(recs))
	out := make([]forwarder.Record, len(recs))
	for i, r := range recs {
		sctx, sp := t.tr.Start(FromHeaders(ctx, r.Headers), SpanForward,
			trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(AttrMessageID.String(r.ID), AttrTarget.String(t.name), AttrTopic.String(r.Topic)))
		hs := slices.Clone(r.Headers)
		propagator.Inject(sctx, Headers{&hs})
		r.Headers = hs
		out[i], spans[i] = r, sp
	}
	res := t.next.Send(ctx, out)
	for i, sp := range spans {
		if i < len(res) && res[i].Err != nil {
			sp.RecordError(res[i].Err)
			sp.SetStatus(codes.Error, "send failed")
		} else if i < len(res) {
			sp.SetAttributes(AttrRef.String(res[i].Ref))
		}
		sp.End()
	}
	return res
}

func (t *target) Close() error { return t.next.Close() }
