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

// CheckbackOption configures NewCheckbackHandler. Options are built only
// by this package's With... functions.
type CheckbackOption interface{ applyCheckback(*checkbackConfig) }

type checkbackOptionFunc func(*checkbackConfig)

func (f checkbackOptionFunc) applyCheckback(c *checkbackConfig) { f(c) }

type checkbackConfig struct {
	secrets      [][]byte
	maxAge       time.Duration
	maxFuture    time.Duration
	acceptV1     bool
	replaySize   int
	tripleMethod string
	log          *slog.Logger
	now          func() time.Time
}

// DefaultReplayCacheSize is how many accepted signatures the check-back
// handler remembers by default to refuse replays (see WithReplayCacheSize).
const DefaultReplayCacheSize = 100_000

// WithSecret makes the handler require the center's EC-Signature header,
// the v2 HMAC-SHA256 with this secret (the bizID's secret in the center's
// configuration) over the canonical request (checkback.Signed.Canonical:
// method, Host, request target, Triple version and group, body hash).
// Requests without it, with a wrong one, with a timestamp older than 5
// minutes (WithSignatureSkew) or more than 30 seconds ahead
// (WithSignatureFutureSkew), or with a signature already accepted once
// (a replay) are answered 401. Give it more than once to accept several
// secrets while rotating.
func WithSecret(secret string) CheckbackOption {
	return checkbackOptionFunc(func(c *checkbackConfig) { c.secrets = append(c.secrets, []byte(secret)) })
}

// WithSignatureSkew sets how old a signature's timestamp may be by the
// handler's clock (default 5 minutes). Accepted signatures are remembered
// this long to refuse replays.
func WithSignatureSkew(d time.Duration) CheckbackOption {
	return checkbackOptionFunc(func(c *checkbackConfig) { c.maxAge = d })
}

// WithSignatureFutureSkew sets how far ahead of the handler's clock a
// signature's timestamp may be (default 30 seconds).
func WithSignatureFutureSkew(d time.Duration) CheckbackOption {
	return checkbackOptionFunc(func(c *checkbackConfig) { c.maxFuture = d })
}

// WithLegacySignatureV1 also accepts the legacy v1 signature
// (EC-Signature: t=..,v1=..), sent by centers before v2 or by a center
// whose bizID has SignV1 set. v1 is weak: one request's signature can be
// moved onto another (the handler refuses a GET with a body, which closes
// the known move on the HTTP shape, not on POST), and it covers neither
// the Host nor the Triple headers. Use it only while the center is being
// upgraded; by default only v2 is accepted.
func WithLegacySignatureV1() CheckbackOption {
	return checkbackOptionFunc(func(c *checkbackConfig) { c.acceptV1 = true })
}

// WithReplayCacheSize bounds how many accepted signatures are remembered
// to refuse replays (default DefaultReplayCacheSize, about 200 bytes
// each). When it is full the signature nearest its expiry is forgotten
// first, so size it above the handler's check-back rate times the
// signature window (5 minutes).
func WithReplayCacheSize(n int) CheckbackOption {
	return checkbackOptionFunc(func(c *checkbackConfig) { c.replaySize = n })
}

// WithTripleMethod names the Triple method (the last path segment of
// POST /{interface}/{method}); default verifyMessage. The JSON-RPC method
// has the same name (its first letter in either case).
func WithTripleMethod(name string) CheckbackOption {
	return checkbackOptionFunc(func(c *checkbackConfig) { c.tripleMethod = name })
}

// WithCheckbackLogger sets the logger for errors of fn (default slog.Default()).
func WithCheckbackLogger(l *slog.Logger) CheckbackOption {
	return checkbackOptionFunc(func(c *checkbackConfig) { c.log = l })
}

// WithCheckbackClock sets the clock used to check signature timestamps.
func WithCheckbackClock(now func() time.Time) CheckbackOption {
	return checkbackOptionFunc(func(c *checkbackConfig) { c.now = now })
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
// A GET with a body is answered 400. An error from fn is answered 500
// (HTTP and Triple) or as a JSON-RPC internal error, all of which the
// center reads as unknown. With WithSecret every request must be signed
// (see there). Mount it on the paths the endpoints name, or on "/"; a
// proxy in front must pass the Host header through as the center sent it
// (host:port), since the signature covers it.
func NewCheckbackHandler(fn CheckbackFunc, opts ...CheckbackOption) http.Handler {
	c := checkbackConfig{
		maxAge: checkback.DefaultMaxAge, maxFuture: checkback.DefaultMaxFuture,
		replaySize: DefaultReplayCacheSize, tripleMethod: checkback.DefaultMethod,
	}
	for _, o := range opts {
		o.applyCheckback(&c)
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.maxAge <= 0 {
		c.maxAge = checkback.DefaultMaxAge
	}
	if c.maxFuture <= 0 {
		c.maxFuture = checkback.DefaultMaxFuture
	}
	if c.replaySize <= 0 {
		c.replaySize = DefaultReplayCacheSize
	}
	return &checkbackHandler{fn: fn, cfg: c, replays: newReplayCache(c.replaySize)}
}

type checkbackHandler struct {
	fn      CheckbackFunc
	cfg     checkbackConfig
	replays *replayCache
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
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && len(body) > 0 {
		// The HTTP shape carries everything in the query; a body on GET can
		// only be an attempt to shift signed bytes between target and body.
		writeJSON(w, http.StatusBadRequest, map[string]string{"status": "FAIL", "message": "a GET check-back has no body"})
		return
	}
	if len(h.cfg.secrets) > 0 {
		if err := h.verify(r, body); err != nil {
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

// errReplayed: the signature was accepted before.
var errReplayed = errors.New("EC-Signature already used (replay)")

// verify checks the request's signature and that it was not seen before.
func (h *checkbackHandler) verify(r *http.Request, body []byte) error {
	now := h.cfg.now()
	v, err := checkback.Verify(r.Header.Get(checkback.SignatureHeader), checkback.SignedRequest(r, body), checkback.VerifyOptions{
		Secrets: h.cfg.secrets, Now: now, MaxAge: h.cfg.maxAge, MaxFuture: h.cfg.maxFuture, AcceptV1: h.cfg.acceptV1,
	})
	if err != nil {
		return err
	}
	// The signature is refused as stale after At+maxAge: remember it that long.
	// Keyed by the request, not by the MAC that matched; with v1
	// accepted, what v1 covers is remembered too, so that a request signed
	// "t,v2,v1" and sent again as "t,v1" (to any Host) is a replay.
	until := v.At.Add(h.cfg.maxAge)
	if h.replays.seen(v.Key, until, now) {
		return errReplayed
	}
	if h.cfg.acceptV1 && v.V1Key != v.Key {
		h.replays.seen(v.V1Key, until, now)
	}
	return nil
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
