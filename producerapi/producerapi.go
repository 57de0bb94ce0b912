package producerapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/ingest"
	"github.com/eventcenter/eventcenter/internal/httpguard"
	"github.com/eventcenter/eventcenter/state"
)

// topicFor is the control topic of bizID's envelopes.
func (h *Handler) topicFor(bizID string) string {
	if h.cfg.ControlTopicFor != nil {
		if t := h.cfg.ControlTopicFor(bizID); t != "" {
			return t
		}
	}
	return h.cfg.ControlTopic
}

// Producer writes control records and waits for the broker's
// acknowledgement. A *kgo.Client configured with acks=all and Kafka's
// murmur2 key partitioner (kgo.StickyKeyPartitioner(nil)) is one.
type Producer interface {
	ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults
}

// Getter reads a message's state (the center's store).
type Getter interface {
	Get(ctx context.Context, bizID, key string) (state.Message, error)
}

// Handler serves the producer API.
type Handler struct {
	cfg  Config
	log  *slog.Logger
	mux  *http.ServeMux
	lim  *limiters
	dec  envelope.Decoder
	met  *metrics
	docs []byte
	// names maps a route's mux pattern to its name.
	names map[string]string
	cross *httpguard.CrossOrigin
	slots httpguard.Slots
}

// route is one endpoint: its method and path (as in the OpenAPI document),
// its name (the metrics' route label) and its handler.
type route struct {
	method, path, name string
	serve              func(*Handler, http.ResponseWriter, *http.Request) int
}

// routes are every endpoint; the OpenAPI document lists exactly these.
var routes = []route{
	{"POST", "/v1/messages/{bizID}/{key}/prepare", "prepare", (*Handler).prepare},
	{"POST", "/v1/messages/{bizID}/{key}/commit", "commit", (*Handler).commit},
	{"POST", "/v1/messages/{bizID}/{key}/rollback", "rollback", (*Handler).rollback},
	{"POST", "/v1/messages/{bizID}/{key}/cancel", "cancel", (*Handler).cancel},
	{"GET", "/v1/messages/{bizID}/{key}", "get", (*Handler).get},
	{"POST", "/v1/batch", "batch", (*Handler).batch},
	{"GET", "/v1/openapi.json", "openapi", (*Handler).openapi},
}

// New returns the handler.
func New(cfg Config) (*Handler, error) {
	cfg.setDefaults()
	if err := cfg.validate(false); err != nil {
		return nil, err
	}
	met, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("producerapi: %w", err)
	}
	h := &Handler{
		cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), met: met,
		lim:  newLimiters(cfg.Rate, cfg.Burst),
		dec:  envelope.Decoder{MaxPayload: cfg.MaxPayload},
		docs: openAPIDocument, names: map[string]string{},
		cross: httpguard.NewCrossOrigin(true),
		slots: httpguard.NewSlots(cfg.MaxConcurrent),
	}
	for _, rt := range routes {
		pattern := rt.method + " " + rt.path
		h.names[pattern] = rt.name
		h.mux.Handle(pattern, h.instrument(rt.name, rt.serve))
	}
	return h, nil
}

// ServeHTTP serves the API; anything not a route is 404 (or 405 for a
// route's path with another method). Before any route, the listener's
// checks (screen) and its cap on requests at once (Config.MaxConcurrent).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, pattern := h.mux.Handler(r)
	name := h.names[pattern]
	if e := h.screen(r); e != nil {
		h.refused(w, name, e)
		return
	}
	if !h.slots.TryAcquire() {
		h.refused(w, name, &apiError{code: http.StatusServiceUnavailable, retryAfter: time.Second,
			msg: fmt.Sprintf("too many producer API requests at once (ingress.max_concurrent, %d): retry", h.cfg.MaxConcurrent)})
		return
	}
	defer h.slots.Release()
	if name == "" {
		rec := &statusWriter{ResponseWriter: w}
		h.mux.ServeHTTP(rec, r)
		h.met.requests.WithLabelValues("unmatched", strconv.Itoa(rec.code())).Inc()
		return
	}
	h.mux.ServeHTTP(w, r)
}

// openHostMsg is the answer of open mode to a request for another host.
const openHostMsg = "the producer API runs without tokens (ingress.insecure) and answers only requests addressed to localhost, 127.0.0.1 or [::1]; " +
	"Host %q refused (a page on another site may be reaching this server through DNS rebinding). Use http://127.0.0.1:<port>/, or configure ingress.tokens"

// crossSiteMsg is the answer to a cross-origin browser request.
const crossSiteMsg = "cross-origin browser request refused: the producer API serves services, not web pages (Sec-Fetch-Site or Origin names another site)"

// screen is what the listener refuses before any route: in open mode a
// Host that is not this machine's, a cross-origin browser request (for
// every method: no page may read message states either), and a path or
// query that is not text (which no bizID or key can be, and PostgreSQL
// would refuse with an error that reads like an outage).
func (h *Handler) screen(r *http.Request) *apiError {
	if h.open() && !httpguard.LoopbackHost(r.Host) {
		return &apiError{code: http.StatusForbidden, msg: fmt.Sprintf(openHostMsg, r.Host)}
	}
	if h.cross.Check(r) != nil {
		return &apiError{code: http.StatusForbidden, msg: crossSiteMsg}
	}
	if err := httpguard.TextErr(r); err != nil {
		return badRequest("", "%v", err)
	}
	return nil
}

// refused answers a request the listener refused before its route, counted
// under the route it was for ("unmatched" for none).
func (h *Handler) refused(w http.ResponseWriter, name string, e *apiError) {
	code := writeError(w, e)
	if name == "" {
		name = "unmatched"
	} else if h.cfg.observe != nil {
		h.cfg.observe(name, code)
	}
	h.met.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
}

// instrument counts and times a route's answers.
func (h *Handler) instrument(name string, serve func(*Handler, http.ResponseWriter, *http.Request) int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		code := serve(h, w, r)
		h.met.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
		h.met.duration.WithLabelValues(name).Observe(time.Since(start).Seconds())
		if h.cfg.observe != nil {
			h.cfg.observe(name, code)
		}
	})
}

// apiError is an error answer: {"error": ..., "field": ...}.
type apiError struct {
	code  int
	field string
	msg   string
	// retryAfter, when positive, is sent as Retry-After (whole seconds,
	// rounded up).
	retryAfter time.Duration
}

func (e *apiError) Error() string {
	if e.field == "" {
		return e.msg
	}
	return e.field + ": " + e.msg
}

func badRequest(field, format string, args ...any) *apiError {
	return &apiError{code: http.StatusBadRequest, field: field, msg: fmt.Sprintf(format, args...)}
}

// writeError answers e and returns its status.
func writeError(w http.ResponseWriter, e *apiError) int {
	switch e.code {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="eventcenter producer API"`)
	}
	if e.retryAfter > 0 {
		secs := int64((e.retryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	body := map[string]string{"error": e.Error()}
	if e.field != "" {
		body["field"] = e.field
	}
	return writeJSON(w, e.code, body)
}

func writeJSON(w http.ResponseWriter, code int, v any) int {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
	return code
}

// allow authenticates the request, checks that its token may act for the
// bizIDs, and takes n envelopes from its bucket.
func (h *Handler) allow(r *http.Request, n int, bizIDs func(yield func(field, bizID string) bool)) *apiError {
	tok, ok := h.authenticate(r)
	if !ok {
		return &apiError{code: http.StatusUnauthorized, msg: "a producer token is required: Authorization: Bearer <token> (ingress.tokens)"}
	}
	var denied *apiError
	bizIDs(func(field, bizID string) bool {
		if !tok.allows(bizID) {
			denied = &apiError{code: http.StatusForbidden, field: field, msg: fmt.Sprintf("token %q may not act for bizID %q", tok.Name, bizID)}
			return false
		}
		return true
	})
	if denied != nil {
		return denied
	}
	wait, tooMany := h.lim.take(&tok, n, h.cfg.Now())
	switch {
	case tooMany:
		return &apiError{code: http.StatusTooManyRequests, msg: fmt.Sprintf("%d envelopes in one request exceed token %q's burst: send fewer at once", n, tok.Name)}
	case wait > 0:
		return overRate(&tok, wait)
	}
	return nil
}

// overRate is the answer to a request over its token's rate.
func overRate(tok *Token, wait time.Duration) *apiError {
	return &apiError{code: http.StatusTooManyRequests, retryAfter: wait,
		msg: fmt.Sprintf("token %q is over its rate limit: retry after %s", tok.Name, wait.Round(time.Millisecond))}
}

// one yields a single bizID for allow.
func one(bizID string) func(yield func(field, bizID string) bool) {
	return func(yield func(string, string) bool) { yield("bizID", bizID) }
}

func (h *Handler) prepare(w http.ResponseWriter, r *http.Request) int {
	return h.single(w, r, envelope.Prepare)
}

func (h *Handler) commit(w http.ResponseWriter, r *http.Request) int {
	return h.single(w, r, envelope.Commit)
}

func (h *Handler) rollback(w http.ResponseWriter, r *http.Request) int {
	return h.single(w, r, envelope.Rollback)
}

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request) int {
	return h.single(w, r, envelope.Cancel)
}

// single serves prepare, commit, rollback and cancel.
func (h *Handler) single(w http.ResponseWriter, r *http.Request, typ envelope.Type) int {
	bizID, key := r.PathValue("bizID"), r.PathValue("key")
	if err := h.allow(r, 1, one(bizID)); err != nil {
		return writeError(w, err)
	}
	params, perr := requestParams(r)
	if perr != nil {
		return writeError(w, perr)
	}
	body, berr := h.readPayload(r, typ)
	if berr != nil {
		return writeError(w, berr)
	}
	out, verr := h.envelope(typ, bizID, key, body, params)
	if verr != nil {
		return writeError(w, verr)
	}
	res, err := h.produce(r.Context(), []outgoing{out})
	if err != nil {
		return writeError(w, err)
	}
	return writeJSON(w, http.StatusAccepted, res[0])
}

// readPayload reads a PREPARE's body within the payload limit; commit and
// rollback carry none.
func (h *Handler) readPayload(r *http.Request, typ envelope.Type) ([]byte, *apiError) {
	limit := h.cfg.MaxPayload
	if typ != envelope.Prepare {
		limit = 0
	}
	if r.ContentLength > int64(limit) {
		return nil, h.payloadError(typ, strconv.FormatInt(r.ContentLength, 10))
	}
	body, err := readAtMost(r.Body, limit)
	if err != nil {
		return nil, badRequest("value", "reading the body: %v", err)
	}
	if len(body) > limit {
		return nil, h.payloadError(typ, "more than "+strconv.Itoa(limit))
	}
	return body, nil
}

func (h *Handler) payloadError(typ envelope.Type, size string) *apiError {
	if typ != envelope.Prepare {
		return badRequest("value", "%s carries no payload or routing (only prepare does)", typ)
	}
	return &apiError{code: http.StatusRequestEntityTooLarge, field: "value",
		msg: "payload of " + size + " bytes exceeds the limit of " + strconv.Itoa(h.cfg.MaxPayload)}
}

// outgoing is one envelope to produce, with the order key whose partition
// its control record goes to ("" for the partition of its own key).
type outgoing struct {
	e        envelope.Envelope
	orderKey string
}

// envelope builds the control record of one envelope from its parts and
// decodes it as ingest would: the same rules, limits and error texts. A
// commit or rollback takes one parameter, ec-order-key, and only to reach
// the partition its PREPARE went to: it is not written into the record.
func (h *Handler) envelope(typ envelope.Type, bizID, key string, payload []byte, params []envelope.Header) (outgoing, *apiError) {
	var orderKey string
	if typ != envelope.Prepare {
		for _, p := range params {
			if p.Key != envelope.HeaderOrderKey || orderKey != "" {
				return outgoing{}, badRequest(p.Key, "%s carries no payload or routing (only prepare does): its one parameter is %s, to reach the PREPARE's partition", typ, envelope.HeaderOrderKey)
			}
			orderKey = string(p.Value)
		}
		params = nil
	}
	hs := make([]envelope.Header, 0, 3+len(params))
	hs = append(hs,
		envelope.Header{Key: envelope.HeaderType, Value: []byte(typ.String())},
		envelope.Header{Key: envelope.HeaderBiz, Value: []byte(bizID)},
		envelope.Header{Key: envelope.HeaderKey, Value: []byte(key)})
	hs = append(hs, params...)
	if typ == envelope.Prepare {
		if err := h.checkTopic(params); err != nil {
			return outgoing{}, err
		}
	}
	rec := envelope.Record{Topic: h.cfg.ControlTopic, Key: []byte(envelope.Key(bizID, key)), Value: payload, Headers: hs}
	e, err := h.dec.Decode(rec)
	if err != nil {
		var de *envelope.DecodeError
		if errors.As(err, &de) {
			code := http.StatusBadRequest
			if errors.Is(err, envelope.ErrTooLarge) {
				code = http.StatusRequestEntityTooLarge
			}
			return outgoing{}, &apiError{code: code, field: de.Field, msg: de.Reason}
		}
		return outgoing{}, badRequest("", "%v", err)
	}
	if e.Type != envelope.Prepare {
		return outgoing{e: e, orderKey: orderKey}, nil
	}
	if !e.DeliverAt.IsZero() && !e.DeliverAt.After(h.cfg.Now()) {
		// Ingest would dead-letter it: the record's time is about now.
		return outgoing{}, badRequest(envelope.HeaderDeliverAt, "%s is not in the future", e.DeliverAt.Format(time.RFC3339Nano))
	}
	if (!e.DeliverAt.IsZero() || e.Delay != 0) && h.cfg.Scheduling != nil {
		if on, why := h.cfg.Scheduling(); !on {
			field := envelope.HeaderDeliverAt
			if e.Delay != 0 {
				field = envelope.HeaderDelay
			}
			// Ingest would dead-letter it; the upgrade that turns it
			// off is temporary.
			return outgoing{}, &apiError{code: http.StatusServiceUnavailable, field: field, msg: why, retryAfter: 30 * time.Second}
		}
	}
	// Ingest's limit, counted from now as ingest counts from the record's
	// time: what it would dead-letter (leaving the COMMIT an orphan) is
	// refused here.
	if field, reason := ingest.CheckSchedule(&e, h.cfg.Now(), h.cfg.MaxDelay); field != "" {
		return outgoing{}, badRequest(field, "%s", reason)
	}
	if n, limit := ingest.ForwardedSize(&e), h.cfg.MaxPayload+ingest.RecordOverhead; n > limit {
		return outgoing{}, &apiError{code: http.StatusRequestEntityTooLarge, field: "value",
			msg: fmt.Sprintf("forwarded record of %d bytes (payload %d, forward key, headers and id) exceeds the limit of %d (max payload %d + %d)",
				n, len(e.Payload), limit, h.cfg.MaxPayload, ingest.RecordOverhead)}
	}
	return outgoing{e: e, orderKey: e.OrderKey}, nil
}

// checkTopic applies the forward target's topic rule (Config.CheckTopic)
// to a PREPARE's ec-topic before the envelope's own checks, so that a
// producer sees one rule in one text: the target's. The envelope accepts
// any character some target allows (% and | are RocketMQ's); without
// this, "orders events!" would be refused naming % and | as allowed, and
// "orders|events" then refused by the Kafka target's rule.
func (h *Handler) checkTopic(params []envelope.Header) *apiError {
	if h.cfg.CheckTopic == nil {
		return nil
	}
	var topic, target string
	for _, p := range params {
		switch p.Key {
		case envelope.HeaderTopic:
			topic = string(p.Value)
		case envelope.HeaderTarget:
			target = string(p.Value)
		}
	}
	if topic == "" {
		return nil // the envelope says it is required
	}
	if err := h.cfg.CheckTopic(target, topic); err != nil {
		name := "the default target"
		if target != "" {
			name = fmt.Sprintf("target %q", target)
		}
		return badRequest(envelope.HeaderTopic, "not a topic %s can send to: %v", name, err)
	}
	return nil
}

// accepted is the answer for one envelope the broker acknowledged.
type accepted struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Error is set in a batch answer for an envelope that was not
	// acknowledged.
	Error string `json:"error,omitempty"`
}
