package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/internal/httpguard"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

func (h *handler) routesAPI() {
	p := adminapi.Prefix
	h.mux.Handle("GET "+p+"/messages", h.api(ScopeRead, h.apiList))
	h.mux.Handle("GET "+p+"/messages/{bizID}/{key...}", h.api(ScopeRead, h.apiGet))
	h.mux.Handle("GET "+p+"/messages/{bizID}", h.api(ScopeRead, h.apiGet))
	h.mux.Handle("GET "+p+"/counts", h.api(ScopeRead, h.apiCounts))
	h.mux.Handle("GET "+p+"/blocked", h.api(ScopeRead, h.apiBlocked))
	h.mux.Handle("POST "+p+"/messages/{bizID}/{rest...}", h.api(ScopeAdmin, h.apiAction))
	h.mux.Handle("POST "+p+"/bizids/{bizID}/retry", h.api(ScopeAdmin, h.apiBizRetry))
	h.mux.Handle("GET "+p+"/bizids", h.api(ScopeRead, h.apiBizShares))
	h.mux.Handle("GET "+p+"/registries", h.api(ScopeRead, h.apiRegistries))
	h.mux.Handle("GET "+p+"/dlq", h.api(ScopeRead, h.apiDLQList))
	h.mux.Handle("GET "+p+"/dlq/{partition}/{offset}", h.api(ScopeRead, h.apiDLQGet))
	h.mux.Handle("POST "+p+"/dlq/{partition}/{offset}/replay", h.api(ScopeAdmin, h.apiDLQReplay))
	h.mux.Handle("GET "+p+"/audit", h.api(ScopeRead, h.apiAuditLog))
	h.mux.Handle(p+"/", h.api(ScopeRead, func(w http.ResponseWriter, r *http.Request, _ principal) error {
		return &apiError{http.StatusNotFound, fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)}
	}))
}

type apiFunc func(w http.ResponseWriter, r *http.Request, p principal) error

// api authenticates, authorizes and turns the returned error into a JSON
// answer. Nothing runs for a request that fails authentication or lacks the
// scope.
func (h *handler) api(scope string, f apiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, aerr := h.auth.bearer(r)
		if aerr != nil {
			w.Header().Set("WWW-Authenticate", aerr.challenge)
			writeError(w, http.StatusUnauthorized, aerr.msg)
			return
		}
		if scope == ScopeAdmin && !p.canAct() {
			writeError(w, http.StatusForbidden, fmt.Sprintf("token %q has scope %q; this action needs scope %q", p.Name, p.Scope, ScopeAdmin))
			return
		}
		if err := f(w, r, p); err != nil {
			code, msg := classify(err)
			if code >= 500 {
				h.log.Error("admin API request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			}
			writeError(w, code, msg)
		}
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, adminapi.Error{Error: msg})
}

// badText tells whether s cannot be stored as text: a NUL byte or invalid
// UTF-8 (PostgreSQL refuses both).
func badText(s string) bool { return httpguard.BadText(s) }

// textErr is why a request's path or query cannot be used, or nil.
func textErr(r *http.Request) error {
	if err := httpguard.TextErr(r); err != nil {
		return badRequest("%v", err)
	}
	return nil
}

// plainText answers 400 to a request whose path or query parameters hold
// a NUL byte or invalid UTF-8, before anything reads the store (which
// would fail with its own error, a 500).
func (h *handler) plainText(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := textErr(r); err != nil {
			if strings.HasPrefix(r.URL.Path, adminapi.Prefix+"/") {
				writeError(w, http.StatusBadRequest, err.Error())
			} else {
				h.render(w, principal{}, &page{tmpl: "error", code: http.StatusBadRequest, Title: "Bad request", Error: err.Error()})
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkQuery refuses parameters the endpoint does not know (a typo would
// otherwise silently list everything).
func checkQuery(q url.Values, known ...string) error {
	for k := range q {
		ok := false
		for _, n := range known {
			ok = ok || k == n
		}
		if !ok {
			return badRequest("unknown query parameter %q (known: %s)", k, strings.Join(known, ", "))
		}
	}
	return nil
}

func (h *handler) limit(s string) (int, error) {
	if s == "" {
		return h.cfg.DefaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > h.cfg.MaxLimit {
		return 0, badRequest("limit: %q is not a number between 1 and %d", s, h.cfg.MaxLimit)
	}
	return n, nil
}

// filterFrom reads the list filter from query parameters (shared by the API
// and the console).
func (h *handler) filterFrom(q url.Values) (store.Filter, error) {
	var f store.Filter
	var err error
	if s := strings.ToUpper(strings.TrimSpace(q.Get("status"))); s == "SCHEDULED" {
		f.ScheduledAt = h.now() // a view of COMMITTED PENDING, not a status
	} else if s != "" {
		if f.Status, err = state.ParseStatus(s); err != nil {
			return f, badRequest("status: %v (or SCHEDULED)", err)
		}
	}
	if s := strings.TrimSpace(q.Get("send_status")); s != "" {
		ss, err := state.ParseSendStatus(strings.ToUpper(s))
		if err != nil {
			return f, badRequest("send_status: %v", err)
		}
		f.SendStatus = &ss
	}
	f.BizID = strings.TrimSpace(q.Get("biz_id"))
	f.KeyContains = q.Get("key")
	if s := strings.TrimSpace(q.Get("older_than")); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return f, badRequest("older_than: %q is not a positive duration (e.g. 90s, 15m, 2h)", s)
		}
		f.CreatedBefore = h.now().Add(-d)
	}
	if s := strings.TrimSpace(q.Get("orphan")); s != "" {
		if f.Orphan, err = strconv.ParseBool(s); err != nil {
			return f, badRequest("orphan: %q is not true or false", s)
		}
		if f.Orphan && f.Status != state.None && f.Status != state.Committed {
			return f, badRequest("orphan: an orphan COMMIT is COMMITTED, not %s", f.Status)
		}
		if f.Orphan && f.SendStatus != nil && *f.SendStatus != state.SendPending {
			return f, badRequest("orphan: an orphan COMMIT is never %s (it has no body to send)", *f.SendStatus)
		}
	}
	if f.Limit, err = h.limit(q.Get("limit")); err != nil {
		return f, err
	}
	f.Cursor = q.Get("cursor")
	return f, nil
}

// listErr turns a store's refusal of a cursor into a 400. The store keeps
// its cursor error internal, so its text is matched.
func listErr(err error) error {
	if strings.Contains(err.Error(), "bad list cursor") {
		return badRequest("cursor: %v", err)
	}
	return fmt.Errorf("list messages: %w", err)
}

func (h *handler) apiList(w http.ResponseWriter, r *http.Request, _ principal) error {
	q := r.URL.Query()
	if err := checkQuery(q, "status", "send_status", "biz_id", "older_than", "key", "orphan", "limit", "cursor"); err != nil {
		return err
	}
	f, err := h.filterFrom(q)
	if err != nil {
		return err
	}
	page, err := h.st.List(r.Context(), f)
	if err != nil {
		return listErr(err)
	}
	out := adminapi.MessageList{Messages: []adminapi.Message{}, Next: page.Next}
	for _, m := range page.Messages {
		out.Messages = append(out.Messages, summaryAPI(m))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// messageRef validates a bizID and key taken from a path.
func messageRef(bizID, key string) error {
	switch {
	case bizID == "":
		return badRequest("bizID: empty")
	case strings.Contains(bizID, ":"):
		return badRequest("bizID %q: contains ':'", bizID)
	case key == "":
		return badRequest("message key: empty")
	case badText(bizID) || badText(key):
		return badRequest("bizID and key must be valid UTF-8 without NUL bytes")
	}
	return nil
}

func (h *handler) detail(r *http.Request, bizID, key string) (adminapi.MessageDetail, error) {
	m, err := h.st.Get(r.Context(), bizID, key)
	if err != nil {
		if isNotFound(err) {
			return adminapi.MessageDetail{}, notFound(bizID, key, err)
		}
		return adminapi.MessageDetail{}, fmt.Errorf("get %s: %w", envelopeKey(bizID, key), err)
	}
	audit, err := h.st.Audit(r.Context(), bizID, key)
	if err != nil {
		return adminapi.MessageDetail{}, fmt.Errorf("audit of %s: %w", envelopeKey(bizID, key), err)
	}
	return toDetail(m, audit, h.now()), nil
}

func envelopeKey(bizID, key string) string { return bizID + ":" + key }

// notFound gives a missing message one plain 404 text (drivers word and
// wrap it differently); other errors pass through.
func notFound(bizID, key string, err error) error {
	if isNotFound(err) {
		return &apiError{http.StatusNotFound, "message not found: " + envelopeKey(bizID, key)}
	}
	return err
}

// isNotFound tells whether err says the message does not exist.
func isNotFound(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, state.ErrNoMessage)
}

// pathKey is the key from the path, or from the "key" query parameter when
// the path has none (for keys like "." that cannot be a path segment).
func pathKey(r *http.Request, fromPath string) string {
	if fromPath == "" {
		return r.URL.Query().Get("key")
	}
	return fromPath
}

func (h *handler) apiGet(w http.ResponseWriter, r *http.Request, _ principal) error {
	bizID, key := r.PathValue("bizID"), pathKey(r, r.PathValue("key"))
	if err := messageRef(bizID, key); err != nil {
		return err
	}
	d, err := h.detail(r, bizID, key)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (h *handler) counts(r *http.Request) (adminapi.Counts, error) {
	cs, err := h.st.Counts(r.Context())
	if err != nil {
		return adminapi.Counts{}, fmt.Errorf("counts: %w", err)
	}
	oldest, err := h.st.OldestPrepared(r.Context())
	if err != nil {
		return adminapi.Counts{}, fmt.Errorf("oldest prepared: %w", err)
	}
	out := adminapi.Counts{
		Counts: []adminapi.Count{}, ByStatus: map[string]int64{},
		ByBizID: map[string]map[string]int64{}, OldestPrepared: map[string]time.Time{},
	}
	for _, c := range cs {
		ac := adminapi.Count{BizID: c.BizID, Status: c.Status.String(), N: c.N, Scheduled: c.Scheduled}
		label := ac.Status
		if c.Status == state.Committed {
			ac.SendStatus = c.SendStatus.String()
			label += "/" + ac.SendStatus
		}
		out.Counts = append(out.Counts, ac)
		if out.ByBizID[c.BizID] == nil {
			out.ByBizID[c.BizID] = map[string]int64{}
		}
		out.ByStatus[label] += c.N - c.Scheduled
		out.ByBizID[c.BizID][label] += c.N - c.Scheduled
		if c.Scheduled > 0 {
			out.ByStatus[scheduledLabel] += c.Scheduled
			out.ByBizID[c.BizID][scheduledLabel] += c.Scheduled
		}
		out.Total += c.N
	}
	for b, t := range oldest {
		out.OldestPrepared[b] = t.UTC()
	}
	if h.cfg.DifferingPrepares != nil {
		if d := h.cfg.DifferingPrepares(); len(d) > 0 {
			out.DifferingPrepares = d
		}
	}
	return out, nil
}

// blocked reads the blocked order keys (bizID "" for all).
func (h *handler) blocked(r *http.Request, bizID string, limit int) (adminapi.BlockedKeys, error) {
	out := adminapi.BlockedKeys{Keys: []adminapi.BlockedKey{}}
	o, ok := h.st.(store.Orderer)
	if !ok {
		return out, nil
	}
	bs, err := o.BlockedKeys(r.Context(), bizID, limit)
	if errors.Is(err, store.ErrOrderUnavailable) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("blocked keys: %w", err)
	}
	for _, b := range bs {
		out.Keys = append(out.Keys, adminapi.BlockedKey{BizID: b.BizID, OrderKey: b.OrderKey, Target: b.Target, Topic: b.Topic,
			Head: summaryAPI(b.Head), Waiting: b.Waiting, Since: b.Since.UTC()})
	}
	return out, nil
}

func (h *handler) apiBlocked(w http.ResponseWriter, r *http.Request, _ principal) error {
	q := r.URL.Query()
	if err := checkQuery(q, "biz_id", "limit"); err != nil {
		return err
	}
	limit := 100
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			return badRequest("limit: %q, want 1 to 1000", l)
		}
		limit = n
	}
	out, err := h.blocked(r, q.Get("biz_id"), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) apiCounts(w http.ResponseWriter, r *http.Request, _ principal) error {
	if err := checkQuery(r.URL.Query()); err != nil {
		return err
	}
	out, err := h.counts(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

const maxReason = 1000

// readJSON decodes a request body into v. It must be JSON (a cross-site
// form cannot send that without a CORS preflight); want shows the expected
// shape in errors.
func readJSON(r *http.Request, v any, want string) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return &apiError{http.StatusUnsupportedMediaType, "Content-Type missing: want application/json"}
	}
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return &apiError{http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q: want application/json", ct)}
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("request body: %v (want %s)", err, want)
	}
	return nil
}

// readAction decodes an action body.
func readAction(r *http.Request) (adminapi.ActionRequest, error) {
	var req adminapi.ActionRequest
	return req, readJSON(r, &req, `{"reason": "..."}`)
}

func checkReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return "", badRequest("reason: required (say why, it is written to the audit log)")
	case len(reason) > maxReason:
		return "", badRequest("reason: longer than %d bytes", maxReason)
	case badText(reason):
		return "", badRequest("reason: contains a NUL byte or invalid UTF-8")
	}
	return reason, nil
}

// actionKind maps an action name (and decision) to the operator event.
func actionKind(action, decision string) (state.Kind, error) {
	switch action {
	case actionResolve:
		switch strings.ToLower(strings.TrimSpace(decision)) {
		case adminapi.DecisionCommit:
			return state.KindResolveCommit, nil
		case adminapi.DecisionRollback:
			return state.KindResolveRollback, nil
		case "":
			return 0, badRequest("decision: required for resolve (commit or rollback)")
		default:
			return 0, badRequest("decision: %q, want commit or rollback", decision)
		}
	case actionRedeliver, actionRetry, actionCloseOrphan, actionCloseHead, actionRelease, actionCancel:
		if decision != "" {
			return 0, badRequest("decision: only for resolve")
		}
		switch action {
		case actionRedeliver:
			return state.KindRedeliver, nil
		case actionCloseOrphan:
			return state.KindCloseOrphan, nil
		case actionCloseHead:
			return state.KindCloseHead, nil
		case actionRelease:
			return state.KindReleaseOrder, nil
		case actionCancel:
			return state.KindOperatorCancel, nil
		}
		return state.KindRetryNow, nil
	}
	return 0, &apiError{http.StatusNotFound, fmt.Sprintf("unknown action %q (want resolve, redeliver, retry, close-orphan, close-head, release or cancel)", action)}
}

// act applies one operator action through the store, with an audit record,
// and hands a message it made sendable to the forwarder.
func (h *handler) act(r *http.Request, p principal, bizID, key string, kind state.Kind, reason string) (res adminapi.ActionResult, err error) {
	defer func() {
		result := "applied"
		switch {
		case err != nil:
			if code, _ := classify(err); code < 500 {
				result = "rejected"
			} else {
				result = "error"
			}
		case res.Effect == state.NoOp.String():
			result = "noop"
		}
		h.actions.WithLabelValues(kind.String(), result).Inc()
	}()
	req := store.ApplyRequest{Changes: []store.Change{{
		BizID: bizID, Key: key,
		Event: state.Event{Kind: kind, At: h.now()},
		Audit: &store.Actor{Who: p.Name, Reason: reason},
	}}}
	out, err := h.st.Apply(r.Context(), req)
	if err != nil {
		return res, fmt.Errorf("apply %s to %s: %w", kind, envelopeKey(bizID, key), err)
	}
	if len(out.Outcomes) != 1 {
		return res, fmt.Errorf("apply %s to %s: store returned %d outcomes for 1 change", kind, envelopeKey(bizID, key), len(out.Outcomes))
	}
	if oerr := out.Outcomes[0].Err; oerr != nil {
		return res, notFound(bizID, key, oerr)
	}
	res.Action = kind.String()
	res.Effect = out.Outcomes[0].Effect.String()
	if fast, ok := h.st.(handsOff); ok && len(out.Sendable) > 0 && fast.HandsOff() {
		res.HandedOff = true // the store's Apply is the forwarder's fast path
	}
	h.log.Info("operator action", "action", kind.String(), "id", envelopeKey(bizID, key),
		"who", p.Name, "reason", reason, "effect", res.Effect, "handed_off", res.HandedOff)
	d, err := h.detail(r, bizID, key)
	if err != nil {
		return res, fmt.Errorf("%s applied, but reading the message back failed: %w", kind, err)
	}
	res.Message = d
	return res, nil
}

// splitAction splits "{key}/{action}" (the key may contain '/').
func splitAction(rest string) (key, action string) {
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return "", rest
	}
	return rest[:i], rest[i+1:]
}

func (h *handler) apiAction(w http.ResponseWriter, r *http.Request, p principal) error {
	bizID := r.PathValue("bizID")
	key, action := splitAction(r.PathValue("rest"))
	if key = pathKey(r, key); key == "" {
		return &apiError{http.StatusNotFound, fmt.Sprintf("no such endpoint: POST %s (want .../messages/{bizID}/{key}/resolve|redeliver|retry|close-orphan|close-head|release|cancel)", r.URL.Path)}
	}
	if err := messageRef(bizID, key); err != nil {
		return err
	}
	req, err := readAction(r)
	if err != nil {
		return err
	}
	kind, err := actionKind(action, req.Decision)
	if err != nil {
		return err
	}
	reason, err := checkReason(req.Reason)
	if err != nil {
		return err
	}
	res, err := h.act(r, p, bizID, key, kind, reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (h *handler) bizRetry(r *http.Request, p principal, bizID, reason string) (adminapi.BulkRetryResult, error) {
	n, err := h.st.RetryNowBizID(r.Context(), bizID, store.Actor{Who: p.Name, Reason: reason})
	if err != nil {
		h.actions.WithLabelValues("retry_bizid", "error").Inc()
		return adminapi.BulkRetryResult{}, fmt.Errorf("retry bizID %s: %w", bizID, err)
	}
	h.actions.WithLabelValues("retry_bizid", "applied").Inc()
	h.log.Info("operator action", "action", "retry_bizid", "biz_id", bizID, "who", p.Name, "reason", reason, "reset", n)
	return adminapi.BulkRetryResult{BizID: bizID, Reset: n}, nil
}

func (h *handler) apiBizRetry(w http.ResponseWriter, r *http.Request, p principal) error {
	bizID := r.PathValue("bizID")
	if bizID == "" || strings.Contains(bizID, ":") {
		return badRequest("bizID %q: empty or contains ':'", bizID)
	}
	req, err := readAction(r)
	if err != nil {
		return err
	}
	if req.Decision != "" {
		return badRequest("decision: only for resolve")
	}
	reason, err := checkReason(req.Reason)
	if err != nil {
		return err
	}
	res, err := h.bizRetry(r, p, bizID, reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

var errNoDLQ = &apiError{http.StatusNotImplemented, "no dead-letter topic is configured"}

// laneNames are the extra lanes with a dead-letter topic, as configured.
func (h *handler) laneNames() []string {
	if len(h.cfg.LaneDLQs) == 0 {
		return nil
	}
	out := make([]string, len(h.cfg.LaneDLQs))
	for i, l := range h.cfg.LaneDLQs {
		out[i] = l.Lane
	}
	return out
}

// laneDLQ returns the dead-letter topic of a lane ("": the default lane).
func (h *handler) laneDLQ(lane string) (DLQ, error) {
	if lane == "" {
		if h.dlq == nil {
			return nil, errNoDLQ
		}
		return h.dlq, nil
	}
	for _, l := range h.cfg.LaneDLQs {
		if l.Lane == lane {
			return l.DLQ, nil
		}
	}
	if len(h.cfg.LaneDLQs) == 0 {
		return nil, badRequest("lane %q: no such lane, no extra lanes are configured (kafka.lanes); leave lane out for the default lane", lane)
	}
	return nil, badRequest("lane %q: no such lane; configured lanes: %s (leave lane out for the default lane)", lane, strings.Join(h.laneNames(), ", "))
}

// ofLane is " of lane NAME" for an extra lane, "" for the default one.
func ofLane(lane string) string {
	if lane == "" {
		return ""
	}
	return " of lane " + lane
}

func (h *handler) dlqList(r *http.Request, lane, limitS, cursor string) (adminapi.DLQList, error) {
	dlq, err := h.laneDLQ(lane)
	if err != nil {
		return adminapi.DLQList{}, err
	}
	limit, err := h.limit(limitS)
	if err != nil {
		return adminapi.DLQList{}, err
	}
	recs, next, err := dlq.List(r.Context(), DLQQuery{Limit: limit, After: cursor, MaxBytes: h.cfg.DLQPageBytes, Preview: h.cfg.DLQPreviewBytes})
	if err != nil {
		return adminapi.DLQList{}, fmt.Errorf("list dead-letter records%s: %w", ofLane(lane), err)
	}
	out := adminapi.DLQList{Lane: lane, Lanes: h.laneNames(), Records: make([]adminapi.DLQRecord, 0, len(recs)), Next: next,
		PreviewBytes: h.cfg.DLQPreviewBytes, MaxBytes: h.cfg.DLQPageBytes}
	for _, rec := range recs {
		// Cut here too, whatever the DLQ kept.
		a := rec.toAPI(h.cfg.DLQPreviewBytes)
		a.Lane = lane
		out.Records = append(out.Records, a)
	}
	return out, nil
}

// dlqRecord reads one whole dead-letter record of a lane.
func (h *handler) dlqRecord(r *http.Request, lane, ps, os string) (adminapi.DLQRecord, error) {
	dlq, err := h.laneDLQ(lane)
	if err != nil {
		return adminapi.DLQRecord{}, err
	}
	partition, offset, err := parsePosition(ps, os)
	if err != nil {
		return adminapi.DLQRecord{}, err
	}
	rec, err := dlq.Get(r.Context(), partition, offset)
	if err != nil {
		return adminapi.DLQRecord{}, fmt.Errorf("read dead-letter record %d/%d%s: %w", partition, offset, ofLane(lane), err)
	}
	a := rec.toAPI(0)
	a.Lane = lane
	return a, nil
}

func (h *handler) apiDLQGet(w http.ResponseWriter, r *http.Request, _ principal) error {
	q := r.URL.Query()
	if err := checkQuery(q, "lane"); err != nil {
		return err
	}
	rec, err := h.dlqRecord(r, q.Get("lane"), r.PathValue("partition"), r.PathValue("offset"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rec)
	return nil
}

func (h *handler) apiDLQList(w http.ResponseWriter, r *http.Request, _ principal) error {
	q := r.URL.Query()
	if err := checkQuery(q, "limit", "cursor", "lane"); err != nil {
		return err
	}
	out, err := h.dlqList(r, q.Get("lane"), q.Get("limit"), q.Get("cursor"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func parsePosition(ps, os string) (int32, int64, error) {
	p, err := strconv.ParseInt(ps, 10, 32)
	if err != nil || p < 0 {
		return 0, 0, badRequest("partition: %q is not a partition number", ps)
	}
	o, err := strconv.ParseInt(os, 10, 64)
	if err != nil || o < 0 {
		return 0, 0, badRequest("offset: %q is not an offset", os)
	}
	return int32(p), o, nil
}

// readReplay decodes a replay body and checks it.
func readReplay(r *http.Request) (string, ReplayFix, error) {
	var req adminapi.DLQReplayRequest
	if err := readJSON(r, &req, `{"reason": "...", "topic": "..."}`); err != nil {
		return "", ReplayFix{}, err
	}
	return checkReplay(req)
}

// checkReplay checks the reason and the fix of a replay.
func checkReplay(req adminapi.DLQReplayRequest) (string, ReplayFix, error) {
	reason, err := checkReason(req.Reason)
	if err != nil {
		return "", ReplayFix{}, err
	}
	fix := ReplayFix{Topic: strings.TrimSpace(req.Topic)}
	if err := fix.Validate(); err != nil {
		return "", ReplayFix{}, err
	}
	return reason, fix, nil
}

// dlqReplay replays a dead-letter record (fixed as asked) and, when it names
// a message that exists, writes the replay to that message's audit log.
func (h *handler) dlqReplay(r *http.Request, p principal, lane string, partition int32, offset int64, reason string, fix ReplayFix) (adminapi.DLQReplayResult, error) {
	res := adminapi.DLQReplayResult{Lane: lane, Partition: partition, Offset: offset}
	dlq, err := h.laneDLQ(lane)
	if err != nil {
		return res, err
	}
	rec, err := dlq.Replay(r.Context(), partition, offset, fix)
	if err != nil {
		result := "error"
		if code, _ := classify(err); code < 500 {
			result = "rejected"
		}
		h.actions.WithLabelValues("dlq_replay", result).Inc()
		return res, fmt.Errorf("replay dead-letter record %d/%d%s: %w", partition, offset, ofLane(lane), err)
	}
	h.actions.WithLabelValues("dlq_replay", "applied").Inc()
	res.Replayed, res.Key = true, string(rec.Key)
	attrs := []any{"action", "dlq_replay", "partition", partition, "offset", offset, "who", p.Name, "reason", reason, "fixed_topic", fix.Topic != ""}
	if lane != "" {
		attrs = append(attrs, "lane", lane)
	}
	h.log.Info("operator action", attrs...)
	bizID, key, ok := envelope.SplitKey(string(rec.Key))
	if e, err := (envelope.Decoder{MaxPayload: -1}).Decode(rec.envelopeRecord()); err == nil {
		// A MiddlewareMessage JSON names its message in the value.
		bizID, key, ok = e.BizID, e.MessageKey, true
	}
	if !ok {
		// A record that names no message is audited by its position
		// (and lane: each lane's dead-letter topic has its own).
		bizID, key = "", fmt.Sprintf("dlq:%d/%d", partition, offset)
		if lane != "" {
			key = fmt.Sprintf("dlq:%s:%d/%d", lane, partition, offset)
		}
	}
	res.Audited, res.Known = h.auditReplay(r, p, bizID, key, lane, partition, offset, reason, fix)
	return res, nil
}

// auditReplay records a replay in the audit log, under the message it
// names whether or not that message exists yet (audit records have their
// own retention, so one of a message that never comes is purged in time).
// A failure is logged and counted: the record is already replayed. known
// tells whether the message exists.
func (h *handler) auditReplay(r *http.Request, p principal, bizID, key, lane string, partition int32, offset int64, reason string, fix ReplayFix) (audited, known bool) {
	st := "NONE"
	m, err := h.st.Get(r.Context(), bizID, key)
	switch {
	case err == nil:
		known = true
		st = m.Status.String()
		if m.Orphan() {
			st += " without body"
		}
	case !errors.Is(err, store.ErrNotFound):
		h.log.Warn("dead-letter replay: reading the message for the audit record failed", "id", envelopeKey(bizID, key), "err", err)
		st = "UNKNOWN"
	}
	what := fmt.Sprintf(" (dead letter %d/%d%s replayed", partition, offset, ofLane(lane))
	if fix.Topic != "" {
		what += " with forward topic " + fix.Topic
	}
	e := store.AuditEntry{BizID: bizID, Key: key, Action: "dlq_replay", Who: p.Name, Reason: reason + what + ")",
		At: h.now(), Before: st, After: st}
	if err := h.st.AddAudit(r.Context(), e); err != nil {
		h.log.Error("dead-letter replay not audited", "id", envelopeKey(bizID, key), "err", err)
		h.actions.WithLabelValues("dlq_replay", "not_audited").Inc()
		return false, known
	}
	return true, known
}

func (h *handler) apiDLQReplay(w http.ResponseWriter, r *http.Request, p principal) error {
	// A mistyped ?lane= must not replay on the default lane.
	q := r.URL.Query()
	if err := checkQuery(q, "lane"); err != nil {
		return err
	}
	partition, offset, err := parsePosition(r.PathValue("partition"), r.PathValue("offset"))
	if err != nil {
		return err
	}
	reason, fix, err := readReplay(r)
	if err != nil {
		return err
	}
	res, err := h.dlqReplay(r, p, q.Get("lane"), partition, offset, reason, fix)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
