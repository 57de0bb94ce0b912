// Package tracing connects the center to OpenTelemetry: it builds the
// tracer provider from the standard OTEL_* environment variables (off by
// default), and wraps the center's seams so that one message makes one
// trace from producer to consumer.
//
// The producer's clientlib puts its span's W3C trace context in the
// PREPARE as the forwarded headers traceparent/tracestate; the center
// stores them with the message like any forwarded header. From them:
//
//   - Store wraps the ingest path's store: each PREPARE, COMMIT or ROLLBACK
//     applied makes an "eventcenter.apply" span, a child of the producer's
//     span, covering the batch transaction it was in.
//   - Target wraps a forward target: each record sent makes an
//     "eventcenter.forward" span (kind producer), a child of the producer's
//     span, and the forwarded record's traceparent is replaced by that
//     span's, so the consumer's span is a child of the forward.
//   - the verifier makes an "eventcenter.checkback" span (kind client) per
//     call and sends its traceparent with the check-back request.
//
// With tracing off nothing is wrapped and the stored traceparent is
// forwarded unchanged, so consumers still continue the producer's trace.
package tracing
