package clientlib

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// Decision is a producer's answer to a check-back.
type Decision int

const (
	// DecisionUnknown: the local transaction is not decided yet (or its
	// outcome cannot be told); the center asks again later. It is the zero
	// value, so a forgotten return never commits.
	DecisionUnknown Decision = iota
	// DecisionCommit: the local transaction committed; the message is sent.
	DecisionCommit
	// DecisionRollback: it rolled back; the message is dropped.
	DecisionRollback
)

// String returns commit, rollback or unknown.
func (d Decision) String() string {
	switch d {
	case DecisionCommit:
		return "commit"
	case DecisionRollback:
		return "rollback"
	default:
		return "unknown"
	}
}

// messageStatus is TrustMessage's number for d: 2 commit, 3 rollback,
// 1 unknown (still prepared).
func (d Decision) messageStatus() int {
	switch d {
	case DecisionCommit:
		return 2
	case DecisionRollback:
		return 3
	default:
		return 1
	}
}

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
	c := checkbackConfig{maxSkew: 5 * time.Minute, tripleMethod: "verifyMessage"}
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
		if err := verifySignature(h.cfg.secrets, r.Header.Get(signatureHeader), h.cfg.now(), h.cfg.maxSkew,
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
	type data struct {
		MessageKey    string `json:"messageKey"`
		MessageStatus int    `json:"messageStatus"`
	}
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Data   data   `json:"data"`
	}{"SUCCESS", data{key, d.messageStatus()}})
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
	bizID, key, err := checkbackArgs(args)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, tripleError{"invalid_argument", err.Error()})
		return
	}
	d, ok := h.decide(r.Context(), bizID, key)
	if !ok {
		writeJSON(w, http.StatusInternalServerError, tripleError{"internal", "check-back handler failed"})
		return
	}
	writeJSON(w, http.StatusOK, d.messageStatus())
}

type tripleError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// JSON-RPC 2.0 error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603
)

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  *int            `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// serveJSONRPC answers JSON-RPC 2.0 verifyMessage.
func (h *checkbackHandler) serveJSONRPC(w http.ResponseWriter, r *http.Request, body []byte) {
	if !isJSON(r.Header.Get("Content-Type")) {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"status": "FAIL", "message": "Content-Type must be application/json"})
		return
	}
	fail := func(id json.RawMessage, code int, msg string) {
		if len(id) == 0 {
			id = json.RawMessage("null")
		}
		writeJSON(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: id, Error: &rpcError{code, msg}})
	}
	if !json.Valid(body) {
		fail(nil, rpcParseError, "parse error")
		return
	}
	var req struct {
		JSONRPC string            `json:"jsonrpc"`
		Method  string            `json:"method"`
		Params  []json.RawMessage `json:"params"`
		ID      json.RawMessage   `json:"id"`
	}
	if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &req) != nil {
		fail(nil, rpcInvalidRequest, "invalid request: want one JSON-RPC 2.0 request object")
		return
	}
	if req.JSONRPC != "2.0" {
		fail(req.ID, rpcInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
		return
	}
	if !strings.EqualFold(req.Method, h.cfg.tripleMethod) {
		fail(req.ID, rpcMethodNotFound, fmt.Sprintf("method %q not found", req.Method))
		return
	}
	bizID, key, err := checkbackArgs(req.Params)
	if err != nil {
		fail(req.ID, rpcInvalidParams, "invalid params: "+err.Error())
		return
	}
	d, ok := h.decide(r.Context(), bizID, key)
	if !ok {
		fail(req.ID, rpcInternalError, "check-back handler failed")
		return
	}
	n := d.messageStatus()
	id := req.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	writeJSON(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: id, Result: &n})
}

// checkbackArgs reads [bizID, messageKey]; bizID may be a number or a string.
func checkbackArgs(args []json.RawMessage) (bizID, key string, err error) {
	if len(args) != 2 {
		return "", "", fmt.Errorf("want 2 arguments [bizID, messageKey], got %d", len(args))
	}
	d := json.NewDecoder(bytes.NewReader(args[0]))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", "", errors.New("bizID is not a JSON value")
	}
	switch t := v.(type) {
	case json.Number:
		bizID = t.String()
	case string:
		bizID = t
	default:
		return "", "", errors.New("bizID must be a number or a string")
	}
	if err := json.Unmarshal(args[1], &key); err != nil {
		return "", "", errors.New("messageKey must be a string")
	}
	if bizID == "" || key == "" {
		return "", "", errors.New("bizID and messageKey must not be empty")
	}
	return bizID, key, nil
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
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
