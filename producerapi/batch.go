package producerapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/internal/httpguard"
)

// batchEnvelope is one envelope of POST /v1/batch's body
// ({"envelopes": [...]}, decoded one at a time): what the path, the body and
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
//
// Nothing of the body is read before the token is known and its bucket
// holds an envelope: a request that would be refused 401 or 429 costs no
// memory. The body is then decoded as it arrives, one envelope at a time,
// within ingress.max_batch_bytes and ingress.max_batch: an envelope for a
// bizID the token may not act for ends the request at once (403), as does
// invalid UTF-8 (400; JSON decoding would turn each bad byte into three).
func (h *Handler) batch(w http.ResponseWriter, r *http.Request) int {
	tok, ok := h.authenticate(r)
	if !ok {
		return writeError(w, &apiError{code: http.StatusUnauthorized, msg: "a producer token is required: Authorization: Bearer <token> (ingress.tokens)"})
	}
	if ct := r.Header.Get("Content-Type"); !httpguard.JSONContentType(ct) {
		return writeError(w, &apiError{code: http.StatusUnsupportedMediaType, field: "Content-Type",
			msg: fmt.Sprintf("%q: a batch is JSON, sent with Content-Type: application/json", ct)})
	}
	if r.ContentLength > int64(h.cfg.MaxBatchBytes) {
		return writeError(w, batchTooLarge(strconv.FormatInt(r.ContentLength, 10), h.cfg.MaxBatchBytes))
	}
	if wait := h.lim.wait(&tok, h.cfg.Now()); wait > 0 {
		return writeError(w, overRate(&tok, wait))
	}
	var es []outgoing
	err := decodeBatch(http.MaxBytesReader(w, r.Body, int64(h.cfg.MaxBatchBytes)), func(i int, be batchEnvelope) *apiError {
		if i >= h.cfg.MaxBatch {
			return &apiError{code: http.StatusRequestEntityTooLarge, field: "envelopes", msg: fmt.Sprintf("at least %d envelopes, at most %d per batch", i+1, h.cfg.MaxBatch)}
		}
		if !tok.allows(be.BizID) {
			return &apiError{code: http.StatusForbidden, field: fmt.Sprintf("envelopes[%d].biz_id", i), msg: fmt.Sprintf("token %q may not act for bizID %q", tok.Name, be.BizID)}
		}
		e, aerr := h.batchEnvelope(be)
		if aerr != nil {
			aerr.field = fmt.Sprintf("envelopes[%d].%s", i, aerr.field)
			return aerr
		}
		es = append(es, e)
		return nil
	})
	if err != nil {
		if err.code == http.StatusRequestEntityTooLarge && err.field == "body" {
			err = batchTooLarge("more than "+strconv.Itoa(h.cfg.MaxBatchBytes), h.cfg.MaxBatchBytes)
		}
		return writeError(w, err)
	}
	n := len(es)
	if n == 0 {
		return writeError(w, badRequest("envelopes", "at least one envelope is required"))
	}
	if err := h.allow(r, n, func(yield func(string, string) bool) {
		for i, o := range es {
			if !yield(fmt.Sprintf("envelopes[%d].biz_id", i), o.e.BizID) {
				return
			}
		}
	}); err != nil {
		return writeError(w, err)
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

// batchShape is the shape of a batch, for error answers.
const batchShape = `want {"envelopes": [{"type": "prepare", "biz_id": ..., "key": ..., "payload": ..., "headers": {"ec-topic": ...}}]}`

// decodeBatch reads {"envelopes": [...]} from body one envelope at a time,
// calling each with the envelope's index; the first error ends it. The
// body must be UTF-8 (RFC 8259) and hold nothing but the object; a read
// past MaxBytesReader's limit is a 413 with field "body".
func decodeBatch(body io.Reader, each func(i int, be batchEnvelope) *apiError) *apiError {
	dec := json.NewDecoder(&utf8Reader{r: body})
	fail := func(err error) *apiError {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			return &apiError{code: http.StatusRequestEntityTooLarge, field: "body", msg: "too large"}
		case errors.Is(err, errNotUTF8):
			return badRequest("body", "%v", err)
		case errors.Is(err, io.EOF):
			err = io.ErrUnexpectedEOF
		}
		return badRequest("body", "not a batch (%v): %s", err, batchShape)
	}
	delim := func(want json.Delim) *apiError {
		t, err := dec.Token()
		if err != nil {
			return fail(err)
		}
		if d, ok := t.(json.Delim); !ok || d != want {
			return badRequest("body", "not a batch (%v where %v was expected): %s", t, want, batchShape)
		}
		return nil
	}
	if err := delim('{'); err != nil {
		return err
	}
	seen := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fail(err)
		}
		switch name, _ := t.(string); {
		case name != "envelopes":
			return badRequest("body", "not a batch (unknown field %q): %s", name, batchShape)
		case seen:
			return badRequest("body", "not a batch (repeated field %q): %s", name, batchShape)
		}
		seen = true
		if err := delim('['); err != nil {
			return err
		}
		dec.DisallowUnknownFields()
		for i := 0; dec.More(); i++ {
			var be batchEnvelope
			if err := dec.Decode(&be); err != nil {
				return fail(err)
			}
			if aerr := each(i, be); aerr != nil {
				return aerr
			}
		}
		if err := delim(']'); err != nil {
			return err
		}
	}
	if err := delim('}'); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil {
			return badRequest("body", "not a batch (data after the object): %s", batchShape)
		}
		return fail(err)
	}
	return nil
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
