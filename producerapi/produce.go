package producerapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/clientlib/kafkarec"
	"github.com/eventcenter/eventcenter/envelope"
)

// produce writes the envelopes to the control topic in order and waits
// for the broker. It returns one answer per envelope; on any failure the
// error is what to answer (413 when the broker refused a record as too
// large, otherwise 503 with Retry-After) and the answers say which were
// acknowledged.
func (h *Handler) produce(ctx context.Context, outs []outgoing) ([]accepted, *apiError) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.ProduceTimeout)
	defer cancel()
	recs := make([]*kgo.Record, len(outs))
	es := make([]envelope.Envelope, len(outs))
	for i, o := range outs {
		rec, err := envelope.Encode(o.e)
		if err != nil { // Decode accepted it: cannot happen
			return nil, &apiError{code: http.StatusBadRequest, msg: err.Error()}
		}
		recs[i] = kafkarec.Record(h.topicFor(o.e.BizID), rec)
		if o.orderKey != "" {
			// The producer's partitioner (kafkarec.Partitioner) sends the
			// records of an ordered message to the partition of
			// bizID:orderKey; others go by their own key.
			recs[i].Context = kafkarec.OrderRoute(ctx, o.e.BizID, o.orderKey)
		}
		es[i] = o.e
	}
	results := h.cfg.Producer.ProduceSync(ctx, recs...)
	out := make([]accepted, len(es))
	var failed *apiError
	for i := range es {
		out[i] = accepted{ID: es[i].ID(), Type: es[i].Type.String(), Topic: recs[i].Topic, Partition: -1, Offset: -1}
		var err error
		if i < len(results) {
			err = results[i].Err
			if err == nil {
				out[i].Partition, out[i].Offset = results[i].Record.Partition, results[i].Record.Offset
				h.met.envelopes.WithLabelValues(es[i].Type.String()).Inc()
				continue
			}
		} else {
			err = errors.New("no result")
		}
		e := h.produceError(recs[i].Topic, err)
		out[i].Error = e.msg
		if failed == nil || e.code == http.StatusServiceUnavailable {
			failed = e
		}
	}
	return out, failed
}

// produceError classifies a produce failure. The broker's own error text
// (addresses, internals) goes to the log only; the answer names the Kafka
// error code when there is one.
func (h *Handler) produceError(topic string, err error) *apiError {
	h.log.Warn("producer API: control record not acknowledged", "topic", topic, "err", err)
	if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
		return &apiError{code: http.StatusRequestEntityTooLarge, field: "value",
			msg: "the broker refused the control record as too large (the control topic's max.message.bytes): not retryable"}
	}
	why := "the broker did not acknowledge within " + h.cfg.ProduceTimeout.String()
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		why = "the broker answered " + ke.Message
	case errors.Is(err, context.Canceled):
		why = "the request was canceled before the broker acknowledged"
	case !errors.Is(err, context.DeadlineExceeded):
		why = "the broker could not be reached or failed"
	}
	return &apiError{code: http.StatusServiceUnavailable, retryAfter: time.Second,
		msg: fmt.Sprintf("control topic %s unavailable: %s; retry (a repeated envelope is harmless), details in the center's log", topic, why)}
}
