package producerapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/eventcenter/eventcenter/envelope"
)

// batchRequest is the body of POST /v1/batch.
type batchRequest struct {
	Envelopes []batchEnvelope `json:"envelopes"`
}

// batchEnvelope is one envelope of a batch: what the path, the body and
// the parameters say for a single request.
type batchEnvelope struct {
	Type  string `json:"type"`
	BizID string `json:"biz_id"`
	Key   string `json:"key"`
	// Payload (UTF-8 text) or PayloadBase64 (bytes), prepare only.
	Payload       *string `json:"payload"`
	PayloadBase64 *string `json:"payload_base64"`
	// Headers are the parameters by name (ec-topic, ec-h-<name>...);
	// forwarded headers are taken in name order.
	Headers map[string]string `json:"headers"`
}

// batch validates every envelope first (nothing is sent when one is
// invalid or not allowed), then produces them in order and answers when
// the broker acknowledged all of them. Envelopes of one message keep their
// order (one key, one partition).
func (h *Handler) batch(w http.ResponseWriter, r *http.Request) int {
	// A token is required before the body is read.
	if _, ok := h.authenticate(r); !ok {
		return writeError(w, &apiError{code: http.StatusUnauthorized, msg: "a producer token is required: Authorization: Bearer <token> (ingress.tokens)"})
	}
	if r.ContentLength > int64(h.cfg.MaxBatchBytes) {
		return writeError(w, batchTooLarge(strconv.FormatInt(r.ContentLength, 10), h.cfg.MaxBatchBytes))
	}
	body, err := readAtMost(r.Body, h.cfg.MaxBatchBytes)
	if err != nil {
		return writeError(w, badRequest("body", "reading the body: %v", err))
	}
	if len(body) > h.cfg.MaxBatchBytes {
		return writeError(w, batchTooLarge("more than "+strconv.Itoa(h.cfg.MaxBatchBytes), h.cfg.MaxBatchBytes))
	}
	var req batchRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return writeError(w, badRequest("body", "not a batch (%v): want {\"envelopes\": [{\"type\": \"prepare\", \"biz_id\": ..., \"key\": ..., \"payload\": ..., \"headers\": {\"ec-topic\": ...}}]}", err))
	}
	n := len(req.Envelopes)
	switch {
	case n == 0:
		return writeError(w, badRequest("envelopes", "at least one envelope is required"))
	case n > h.cfg.MaxBatch:
		return writeError(w, &apiError{code: http.StatusRequestEntityTooLarge, field: "envelopes", msg: fmt.Sprintf("%d envelopes, at most %d per batch", n, h.cfg.MaxBatch)})
	}
	if err := h.allow(r, n, func(yield func(string, string) bool) {
		for i, be := range req.Envelopes {
			if !yield(fmt.Sprintf("envelopes[%d].biz_id", i), be.BizID) {
				return
			}
		}
	}); err != nil {
		return writeError(w, err)
	}
	es := make([]outgoing, n)
	for i, be := range req.Envelopes {
		e, aerr := h.batchEnvelope(be)
		if aerr != nil {
			aerr.field = fmt.Sprintf("envelopes[%d].%s", i, aerr.field)
			return writeError(w, aerr)
		}
		es[i] = e
	}
	res, perr := h.produce(r.Context(), es)
	if perr != nil {
		perr.field = ""
		if perr.retryAfter > 0 {
			w.Header().Set("Retry-After", "1")
		}
		return writeJSON(w, perr.code, map[string]any{"error": perr.msg, "results": res})
	}
	return writeJSON(w, http.StatusAccepted, map[string]any{"results": res})
}

func batchTooLarge(size string, limit int) *apiError {
	return &apiError{code: http.StatusRequestEntityTooLarge, field: "body", msg: fmt.Sprintf("batch of %s bytes exceeds ingress.max_batch_bytes (%d)", size, limit)}
}

func (h *Handler) batchEnvelope(be batchEnvelope) (outgoing, *apiError) {
	var typ envelope.Type
	switch be.Type {
	case "prepare":
		typ = envelope.Prepare
	case "commit":
		typ = envelope.Commit
	case "rollback":
		typ = envelope.Rollback
	case "cancel":
		typ = envelope.Cancel
	default:
		return outgoing{}, badRequest("type", "%q: want prepare, commit, rollback or cancel", be.Type)
	}
	var payload []byte
	switch {
	case be.Payload != nil && be.PayloadBase64 != nil:
		return outgoing{}, badRequest("payload", "give payload or payload_base64, not both")
	case be.Payload != nil:
		payload = []byte(*be.Payload)
	case be.PayloadBase64 != nil:
		var err error
		if payload, err = base64.StdEncoding.DecodeString(*be.PayloadBase64); err != nil {
			return outgoing{}, badRequest("payload_base64", "not standard base64: %v", err)
		}
	}
	if typ != envelope.Prepare && len(payload) > 0 {
		return outgoing{}, badRequest("value", "%s carries no payload or routing (only prepare does)", typ)
	}
	if len(payload) > h.cfg.MaxPayload {
		return outgoing{}, h.payloadError(typ, strconv.Itoa(len(payload)))
	}
	names := make([]string, 0, len(be.Headers))
	for k := range be.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	params := make([]envelope.Header, 0, len(names))
	for _, k := range names {
		if err := checkParamName(k); err != nil {
			err.field = "headers." + err.field
			return outgoing{}, err
		}
		params = append(params, envelope.Header{Key: k, Value: []byte(be.Headers[k])})
	}
	return h.envelope(typ, be.BizID, be.Key, payload, params)
}
