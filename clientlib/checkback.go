package clientlib

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// Decision is a producer's answer to a check-back; it is
// checkback.Decision, named here so that a producer needs one import.
type Decision = checkback.Decision

// The decisions a CheckbackFunc returns.
const (
	// DecisionUnknown: the local transaction is not decided yet (or its
	// outcome cannot be told); the center asks again later. It is the zero
	// value, so a forgotten return never commits.
	DecisionUnknown = checkback.DecisionUnknown
	// DecisionCommit: the local transaction committed; the message is sent.
	DecisionCommit = checkback.DecisionCommit
	// DecisionRollback: it rolled back; the message is dropped.
	DecisionRollback = checkback.DecisionRollback
)

// CheckbackFunc looks up whether the local transaction of a message
// committed. Return DecisionUnknown while it may still be running; an error
// is answered as a failure (unknown to the center, which asks again).
type CheckbackFunc func(ctx context.Context, bizID, messageKey string) (Decision, error)

// CheckbackOption configures NewCheckbackHandler.
type CheckbackOption func(*checkbackConfig)

type checkbackConfig struct {
	secrets      [][]byte
	maxSkew      time.Duration
	tripleMethod string
	log          *slog.Logger
	now          func() time.Time
}

// WithSecret makes the handler require the center's EC-Signature header,
// an HMAC-SHA256 with this secret (the bizID's secret in the center's
// configuration). Requests without it, with a wrong one or with a
// timestamp more than the allowed skew (5 minutes) away are answered 401.
// Give it more than once to accept several secrets while rotating.
func WithSecret(secret string) CheckbackOption {
	return func(c *checkbackConfig) { c.secrets = append(c.secrets, []byte(secret)) }
}

// WithSignatureSkew sets how far a signature's timestamp may be from the
// handler's clock (default 5 minutes).
func WithSignatureSkew(d time.Duration) CheckbackOption {
	return func(c *checkbackConfig) { c.maxSkew = d }
}

// WithTripleMethod names the Triple method (the last path segment of
// POST /{interface}/{method}); default verifyMessage. The JSON-RPC method
// has the same name (its first letter in either case).
func WithTripleMethod(name string) CheckbackOption {
	return func(c *checkbackConfig) { c.tripleMethod = name }
}

// WithCheckbackLogger sets the logger for errors of fn (default slog.Default()).
func WithCheckbackLogger(l *slog.Logger) CheckbackOption {
	return func(c *checkbackConfig) { c.log = l }
}

// WithCheckbackClock sets the clock used to check signature timestamps.
func WithCheckbackClock(now func() time.Time) CheckbackOption {
	return func(c *checkbackConfig) { c.now = now }
}

// maxCheckbackBody bounds a check-back request body.
const maxCheckbackBody = 64 << 10

// NewCheckbackHandler returns an http.Handler answering the center's
// check-back requests with fn, in all three protocols the center speaks:
//
//   - GET <any path>?bizID=..&messageKey=.. (the TrustMessage HTTP shape,
//     endpoint http://host:port/path): answers
//     {"status":"SUCCESS","data":{"messageKey":"..","messageStatus":2|3|1}}.
//   - POST /{interface}/{method} (the last segment is the method,
//     verifyMessage unless WithTripleMethod says otherwise) with a JSON array [bizID, messageKey]
//     (Dubbo Triple JSON, endpoint tri://host:port/{interface}/{method}):
//     answers the bare integer 2, 3 or 1; 415 without a JSON Content-Type,
//     405 for other methods, 400 for a bad body.
//   - POST <any other path> with a JSON-RPC 2.0 request for verifyMessage
//     (Dubbo's http protocol, endpoint jsonrpc://host:port/{path}): answers
//     {"jsonrpc":"2.0","id":..,"result":2|3|1}, or a JSON-RPC error for a bad
//     request.
//
// An error from fn is answered 500 (HTTP and Triple) or as a JSON-RPC
// internal error, all of which the center reads as unknown. Mount it on the
// paths the endpoints name, or on "/".
func NewCheckbackHandler(fn CheckbackFunc, opts ...CheckbackOption) http.Handler {
	c := checkbackConfig{maxSkew: 5 * time.Minute, tripleMethod: checkback.DefaultMethod}
	for _, o := range opts {
		o(&c)
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	return &checkbackHandler{fn: fn, cfg: c}
}

type checkbackHandler struct {
	fn  CheckbackFunc
	cfg checkbackConfig
}

func (h *checkbackHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCheckbackBody+1))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	if len(body) > maxCheckbackBody {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if len(h.cfg.secrets) > 0 {
		target := r.RequestURI
		if target == "" {
			target = r.URL.RequestURI()
		}
		if err := checkback.Verify(h.cfg.secrets, r.Header.Get(checkback.SignatureHeader), h.cfg.now(), h.cfg.maxSkew,
			r.Method, target, body); err != nil {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"status": "FAIL", "message": err.Error()})
			return
		}
	}
	if strings.EqualFold(path.Base(r.URL.Path), h.cfg.tripleMethod) && !isTrustMessageGET(r) {
		h.serveTriple(w, r, body)
		return
	}
	switch r.Method {
	case http.MethodGet:
		h.serveHTTP(w, r)
	case http.MethodPost:
		h.serveJSONRPC(w, r, body)
	default:
		w.Header().Set("Allow", "GET, POST")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"status": "FAIL", "message": "method not allowed"})
	}
}

func (h *checkbackHandler) decide(ctx context.Context, bizID, key string) (Decision, bool) {
	if h.fn == nil {
		h.cfg.log.ErrorContext(ctx, "check-back handler has no CheckbackFunc", "biz_id", bizID, "key", key)
		return DecisionUnknown, false
	}
	d, err := h.fn(ctx, bizID, key)
	if err != nil {
		h.cfg.log.ErrorContext(ctx, "check-back handler failed", "biz_id", bizID, "key", key, "err", err)
		return DecisionUnknown, false
	}
	return d, true
}

// isTrustMessageGET tells a GET of the HTTP shape (an http:// endpoint whose
// path happens to end in the Triple method name) from a GET on a Triple path.
func isTrustMessageGET(r *http.Request) bool {
	q := r.URL.Query()
	return r.Method == http.MethodGet && q.Has("bizID") && q.Has("messageKey")
}

// serveHTTP answers the TrustMessage GET shape.
func (h *checkbackHandler) serveHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	bizID, key := q.Get("bizID"), q.Get("messageKey")
	if bizID == "" || key == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"status": "FAIL", "message": "bizID and messageKey are required"})
		return
	}
	d, ok := h.decide(r.Context(), bizID, key)
	if !ok {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"status": "FAIL", "message": "check-back handler failed"})
		return
	}
	writeRaw(w, http.StatusOK, checkback.HTTPAnswer(key, d))
}

// serveTriple answers Dubbo Triple JSON: POST, body [bizID, messageKey].
func (h *checkbackHandler) serveTriple(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, tripleError{"unimplemented", "only POST is served"})
		return
	}
	if !isJSON(r.Header.Get("Content-Type")) {
		writeJSON(w, http.StatusUnsupportedMediaType, tripleError{"invalid_argument", "Content-Type must be application/json"})
		return
	}
	var args []json.RawMessage
	if err := json.Unmarshal(body, &args); err != nil {
		writeJSON(w, http.StatusBadRequest, tripleError{"invalid_argument", "body must be a JSON array [bizID, messageKey]"})
		return
	}
	bizID, key, err := checkback.ParseArgs(args)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, tripleError{"invalid_argument", err.Error()})
		return
	}
	d, ok := h.decide(r.Context(), bizID, key)
	if !ok {
		writeJSON(w, http.StatusInternalServerError, tripleError{"internal", "check-back handler failed"})
		return
	}
	writeRaw(w, http.StatusOK, checkback.TripleAnswer(d))
}

type tripleError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// serveJSONRPC answers JSON-RPC 2.0 verifyMessage.
func (h *checkbackHandler) serveJSONRPC(w http.ResponseWriter, r *http.Request, body []byte) {
	if !isJSON(r.Header.Get("Content-Type")) {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"status": "FAIL", "message": "Content-Type must be application/json"})
		return
	}
	fail := func(id json.RawMessage, code int, msg string) {
		writeRaw(w, http.StatusOK, checkback.JSONRPCError(id, code, msg))
	}
	if !json.Valid(body) {
		fail(nil, checkback.RPCParseError, "parse error")
		return
	}
	var req struct {
		JSONRPC string            `json:"jsonrpc"`
		Method  string            `json:"method"`
		Params  []json.RawMessage `json:"params"`
		ID      json.RawMessage   `json:"id"`
	}
	if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &req) != nil {
		fail(nil, checkback.RPCInvalidRequest, "invalid request: want one JSON-RPC 2.0 request object")
		return
	}
	if req.JSONRPC != "2.0" {
		fail(req.ID, checkback.RPCInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
		return
	}
	if !strings.EqualFold(req.Method, h.cfg.tripleMethod) {
		fail(req.ID, checkback.RPCMethodNotFound, fmt.Sprintf("method %q not found", req.Method))
		return
	}
	bizID, key, err := checkback.ParseArgs(req.Params)
	if err != nil {
		fail(req.ID, checkback.RPCInvalidParams, "invalid params: "+err.Error())
		return
	}
	d, ok := h.decide(r.Context(), bizID, key)
	if !ok {
		fail(req.ID, checkback.RPCInternalError, "check-back handler failed")
		return
	}
	writeRaw(w, http.StatusOK, checkback.JSONRPCAnswer(req.ID, d))
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode answer", http.StatusInternalServerError)
		return
	}
	writeRaw(w, code, b)
}

// writeRaw writes an encoded JSON answer.
func writeRaw(w http.ResponseWriter, code int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
