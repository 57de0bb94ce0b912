package admin

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/envelope"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/tracing"
)

//go:embed templates/*.html
var templateFS embed.FS

var pageNames = []string{"login", "overview", "messages", "message", "dlq", "dlqrecord", "blocked", "bizids", "registries", "error"}

// uiMsgURL is the console page of a message: /ui/m/{bizID}/{key}, escaped
// as the API paths are.
func uiMsgURL(bizID, key string) string {
	return "/ui/m" + strings.TrimPrefix(adminapi.MessagePath(bizID, key), adminapi.Prefix+"/messages")
}

func uiActionURL(bizID, key, action string) string {
	return "/ui/m" + strings.TrimPrefix(adminapi.ActionPath(bizID, key, action), adminapi.Prefix+"/messages")
}

func timeOf(v any) (time.Time, bool) {
	switch t := v.(type) {
	case time.Time:
		return t, !t.IsZero()
	case *time.Time:
		if t == nil {
			return time.Time{}, false
		}
		return *t, !t.IsZero()
	}
	return time.Time{}, false
}

func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"msgURL":     uiMsgURL,
		"actionURL":  uiActionURL,
		"pathEscape": url.PathEscape,
		"has":        func(xs []string, x string) bool { return slices.Contains(xs, x) },
		"isStuck":    func(col string) bool { return col == "VERIFY_FAILED" || col == "COMMITTED/DEAD" },
		"deref":      func(s *string) string { return *s },
		"join":       strings.Join,
		"traceID":    uiTraceID,
		// partition names a control lane's store partition (20007: lane 2).
		"partition": store.FormatPartition,
		// colTitle lets "COMMITTED/PENDING" break after the slash and
		// "VERIFY_FAILED" after the underscore, so that the overview's
		// columns are as narrow as their numbers (it fits 1280 px).
		"colTitle": func(c string) template.HTML {
			return template.HTML(strings.NewReplacer("/", "/<wbr>", "_", "_<wbr>").Replace(template.HTMLEscapeString(c)))
		},
		"trunc": func(s string, n int) string {
			if len(s) <= n {
				return s
			}
			return strings.ToValidUTF8(s[:n], "") + "…"
		},
		"fmtTime": func(v any) string {
			t, ok := timeOf(v)
			if !ok {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		// ago is filled per request (it needs the clock); see render.
		"ago": func(any) string { return "" },
	}
	base, err := template.New("layout").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range pageNames {
		t, err := base.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := t.ParseFS(templateFS, "templates/"+n+".html"); err != nil {
			return nil, err
		}
		pages[n] = t
	}
	return pages, nil
}

func agoFrom(now time.Time) func(any) string {
	return func(v any) string {
		t, ok := timeOf(v)
		if !ok {
			return "—"
		}
		d := now.Sub(t)
		switch {
		case d < 0:
			return "in " + roundDur(-d)
		case d < time.Second:
			return "just now"
		}
		return roundDur(d) + " ago"
	}
}

func roundDur(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// page is what every console template gets.
type page struct {
	tmpl   string
	code   int
	Title  string
	User   string
	Scope  string
	Open   bool
	CanAct bool
	CSRF   string
	Flash  string
	Error  string
	Data   any
}

func (h *handler) render(w http.ResponseWriter, p principal, pg *page) {
	if p.Name != "" {
		pg.User, pg.Scope, pg.Open, pg.CanAct = p.Name, p.Scope, h.auth.open, p.canAct()
		pg.CSRF = p.formToken()
	}
	t, err := h.pages[pg.tmpl].Clone()
	if err == nil {
		t = t.Funcs(template.FuncMap{"ago": agoFrom(h.now())})
		var buf bytes.Buffer
		if err = t.ExecuteTemplate(&buf, "layout", pg); err == nil {
			uiHeaders(w)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			code := pg.code
			if code == 0 {
				code = http.StatusOK
			}
			w.WriteHeader(code)
			_, _ = w.Write(buf.Bytes())
			return
		}
	}
	h.log.Error("render console page", "page", pg.tmpl, "err", err)
	http.Error(w, "console page failed to render", http.StatusInternalServerError)
}

func uiHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cache-Control", "no-store")
}

func (h *handler) renderErr(w http.ResponseWriter, p principal, err error) {
	code, msg := classify(err)
	if code >= 500 {
		h.log.Error("console request failed", "err", err)
	}
	h.render(w, p, &page{tmpl: "error", code: code, Title: http.StatusText(code), Error: msg})
}

func secureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

type uiGet func(w http.ResponseWriter, r *http.Request, p principal) (*page, error)

// uiPost returns where to redirect after the form; "" means it rendered
// the answer itself.
type uiPost func(w http.ResponseWriter, r *http.Request, p principal) (redirect string, err error)

// ui authenticates a console page; without a session it redirects to the
// login form.
func (h *handler) ui(f uiGet) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := h.auth.session(r)
		if !ok {
			if len(h.auth.tokens) == 0 {
				h.render(w, principal{}, &page{tmpl: "error", code: http.StatusUnauthorized, Title: "Console closed", Error: noTokensMsg})
				return
			}
			http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		pg, err := f(w, r, p)
		if err != nil {
			h.renderErr(w, p, err)
			return
		}
		h.render(w, p, pg)
	}
}

// post authenticates a console form, checks its form token (cross-site
// request forgery) and, for actions, the admin scope; nothing runs when a
// check fails.
func (h *handler) post(needAdmin bool, f uiPost) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := h.auth.session(r)
		if !ok {
			h.render(w, principal{}, &page{tmpl: "error", code: http.StatusUnauthorized, Title: "Not logged in", Error: "log in first (your session may have expired)"})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			h.renderErr(w, p, badRequest("form: %v", err))
			return
		}
		if !p.checkFormToken(r.PostForm.Get("csrf")) {
			h.renderErr(w, p, &apiError{http.StatusForbidden, "form token missing or invalid: reload the page and try again"})
			return
		}
		if needAdmin && !p.canAct() {
			h.renderErr(w, p, &apiError{http.StatusForbidden, fmt.Sprintf("%q has scope %q; actions need scope %q", p.Name, p.Scope, ScopeAdmin)})
			return
		}
		to, err := f(w, r, p)
		switch {
		case err != nil:
			h.renderErr(w, p, err)
		case to != "":
			http.Redirect(w, r, to, http.StatusSeeOther)
		}
	}
}

func (h *handler) routesUI() {
	h.mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	})
	h.mux.HandleFunc("GET /ui/{$}", h.ui(h.uiOverview))
	h.mux.HandleFunc("GET /ui/login", h.uiLoginForm)
	h.mux.HandleFunc("POST /ui/login", h.uiLogin)
	h.mux.HandleFunc("POST /ui/logout", h.post(false, h.uiLogout))
	h.mux.HandleFunc("GET /ui/messages", h.ui(h.uiMessages))
	h.mux.HandleFunc("GET /ui/m/{bizID}/{key...}", h.ui(h.uiMessage))
	h.mux.HandleFunc("GET /ui/m/{bizID}", h.ui(h.uiMessage))
	h.mux.HandleFunc("POST /ui/m/{bizID}/{rest...}", h.uiAction)
	h.mux.HandleFunc("POST /ui/bizids/{bizID}/retry", h.post(true, h.uiBizRetry))
	h.mux.HandleFunc("GET /ui/dlq", h.ui(h.uiDLQ))
	h.mux.HandleFunc("GET /ui/blocked", h.ui(h.uiBlocked))
	h.mux.HandleFunc("GET /ui/bizids", h.ui(h.uiBizShares))
	h.mux.HandleFunc("GET /ui/registries", h.ui(h.uiRegistries))
	h.mux.HandleFunc("GET /ui/dlq/{partition}/{offset}", h.ui(h.uiDLQRecord))
	h.mux.HandleFunc("POST /ui/dlq/{partition}/{offset}/replay", h.post(true, h.uiDLQReplay))
	h.mux.HandleFunc("/ui/", h.ui(func(w http.ResponseWriter, r *http.Request, p principal) (*page, error) {
		return nil, &apiError{http.StatusNotFound, "no such page: " + r.URL.Path}
	}))
}

// safeNext keeps a post-login redirect on the console.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/ui") && !strings.HasPrefix(next, "//") && !strings.Contains(next, "\\") && !badText(next) {
		return next
	}
	return "/ui/"
}

func (h *handler) uiLoginForm(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.auth.session(r); ok {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	pg := &page{tmpl: "login", Title: "Log in", Data: map[string]string{"Next": safeNext(r.URL.Query().Get("next"))}}
	if len(h.auth.tokens) == 0 {
		pg.code, pg.Error = http.StatusUnauthorized, noTokensMsg
	}
	h.render(w, principal{}, pg)
}

func (h *handler) uiLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		h.renderErr(w, principal{}, badRequest("form: %v", err))
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	if h.auth.open {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	c, ok := h.auth.login(r.PostForm.Get("token"), secureRequest(r))
	if !ok {
		msg := "invalid token"
		if len(h.auth.tokens) == 0 {
			msg = noTokensMsg
		}
		h.log.Warn("console login refused", "remote", r.RemoteAddr)
		h.render(w, principal{}, &page{tmpl: "login", code: http.StatusUnauthorized, Title: "Log in", Error: msg, Data: map[string]string{"Next": next}})
		return
	}
	http.SetCookie(w, c)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *handler) uiLogout(w http.ResponseWriter, r *http.Request, p principal) (string, error) {
	h.auth.logout(p)
	http.SetCookie(w, logoutCookie(secureRequest(r)))
	return "/ui/login", nil
}

// maxOldestLookups bounds the per-bizID queries of the overview.
const maxOldestLookups = 50

var overviewColumns = []string{"PREPARED", "VERIFY_FAILED", "COMMITTED/PENDING", scheduledLabel, "COMMITTED/DEAD", "COMMITTED/SENT", "ROLLED_BACK", "CANCELLED"}

// scheduledLabel is the counts' label of SCHEDULED messages (COMMITTED
// PENDING held until their deliver-at).
const scheduledLabel = "COMMITTED/SCHEDULED"

type stuckList struct {
	Title    string
	More     string
	Messages []adminapi.Message
}

func (h *handler) uiOverview(w http.ResponseWriter, r *http.Request, p principal) (*page, error) {
	q := r.URL.Query()
	key, bizID := q.Get("key"), strings.TrimSpace(q.Get("biz_id"))
	counts, err := h.counts(r)
	if err != nil {
		return nil, err
	}
	bizIDs := make([]string, 0, len(counts.ByBizID))
	for b := range counts.ByBizID {
		bizIDs = append(bizIDs, b)
	}
	slices.Sort(bizIDs)
	dead := state.SendDead
	const n = 20
	lists := []struct {
		title string
		f     store.Filter
		more  url.Values
	}{
		{"VERIFY_FAILED (check-backs exhausted)", store.Filter{Status: state.VerifyFailed}, url.Values{"status": {"VERIFY_FAILED"}}},
		{"DEAD (forwarding gave up)", store.Filter{Status: state.Committed, SendStatus: &dead}, url.Values{"status": {"COMMITTED"}, "send_status": {"DEAD"}}},
		{"PREPARED for more than " + roundDur(h.cfg.StuckAfter) + " (newest first)", store.Filter{Status: state.Prepared, CreatedBefore: h.now().Add(-h.cfg.StuckAfter)}, url.Values{"status": {"PREPARED"}, "older_than": {h.cfg.StuckAfter.String()}}},
		{"Orphan COMMITs: committed more than " + roundDur(h.cfg.StuckAfter) + " ago, PREPARE missing (dead-lettered or never sent)", store.Filter{Orphan: true, CreatedBefore: h.now().Add(-h.cfg.StuckAfter)}, url.Values{"orphan": {"true"}, "older_than": {h.cfg.StuckAfter.String()}}},
	}
	// The oldest PREPARED message of each bizID (the list below is newest
	// first, so the oldest could be past its end).
	oldest := map[string]adminapi.Message{}
	for i, b := range bizIDs {
		t, ok := counts.OldestPrepared[b]
		if !ok || i >= maxOldestLookups {
			continue
		}
		pg, err := h.st.List(r.Context(), store.Filter{Status: state.Prepared, BizID: b, CreatedBefore: t.Add(time.Microsecond), Limit: 1})
		if err != nil {
			return nil, listErr(err)
		}
		if len(pg.Messages) > 0 {
			oldest[b] = summaryAPI(pg.Messages[0])
		}
	}
	var stuck []stuckList
	for _, l := range lists {
		l.f.BizID, l.f.KeyContains, l.f.Limit = bizID, key, n
		pg, err := h.st.List(r.Context(), l.f)
		if err != nil {
			return nil, listErr(err)
		}
		sl := stuckList{Title: l.title}
		for _, m := range pg.Messages {
			sl.Messages = append(sl.Messages, summaryAPI(m))
		}
		if bizID != "" {
			l.more.Set("biz_id", bizID)
		}
		if key != "" {
			l.more.Set("key", key)
		}
		sl.More = "/ui/messages?" + l.more.Encode()
		stuck = append(stuck, sl)
	}
	return &page{tmpl: "overview", Title: "Overview", Data: map[string]any{
		"Counts": counts, "BizIDs": bizIDs, "Columns": overviewColumns, "Stuck": stuck, "Oldest": oldest,
		"Key": key, "BizID": bizID, "Trends": h.trendView(), "DLQ": h.dlqCount(r),
	}}, nil
}

func (h *handler) uiMessages(w http.ResponseWriter, r *http.Request, p principal) (*page, error) {
	q := r.URL.Query()
	f, err := h.filterFrom(q)
	if err != nil {
		return nil, err
	}
	res, err := h.st.List(r.Context(), f)
	if err != nil {
		return nil, listErr(err)
	}
	msgs := []adminapi.Message{}
	for _, m := range res.Messages {
		msgs = append(msgs, summaryAPI(m))
	}
	next := ""
	if res.Next != "" {
		nq := url.Values{}
		for k, v := range q {
			nq[k] = v
		}
		nq.Set("cursor", res.Next)
		next = "/ui/messages?" + nq.Encode()
	}
	qs := map[string]string{}
	for _, k := range []string{"key", "biz_id", "status", "send_status", "older_than", "orphan"} {
		qs[k] = q.Get(k)
	}
	if s := qs["status"]; s != "" {
		if st, err := state.ParseStatus(strings.ToUpper(s)); err == nil {
			qs["status"] = st.String()
		}
	}
	return &page{tmpl: "messages", Title: "Messages", Data: map[string]any{
		"Messages": msgs, "Next": next, "Q": qs,
		"Statuses":     []string{"PREPARED", "COMMITTED", "ROLLED_BACK", "VERIFY_FAILED"},
		"SendStatuses": []string{"PENDING", "SENT", "DEAD"},
	}}, nil
}

var doneMessages = map[string]string{
	"resolve_commit":   "Resolved as commit.",
	"resolve_rollback": "Resolved as rollback.",
	"redeliver":        "Redelivery scheduled.",
	"retry_now":        "Retry scheduled now.",
	"close_orphan":     "Orphan COMMIT closed as rolled back; it will never be forwarded.",
	"close_head":       "Closed: DEAD, never sent unless retried; the later messages of its order key go on.",
	"release_order":    "Order key released: the later messages go on; this one is sent without order.",
	"operator_cancel":  "Cancelled: it will never be sent.",
}

func (h *handler) messagePage(r *http.Request, bizID, key string) (*page, error) {
	if err := messageRef(bizID, key); err != nil {
		return nil, err
	}
	d, err := h.detail(r, bizID, key)
	if err != nil {
		return nil, err
	}
	pg := &page{tmpl: "message", Title: bizID + ":" + key, Data: map[string]any{"M": d}}
	if msg, ok := doneMessages[r.URL.Query().Get("done")]; ok {
		pg.Flash = msg
		if r.URL.Query().Get("handed_off") == "1" {
			pg.Flash += " Handed to the forwarder."
		}
	}
	return pg, nil
}

func (h *handler) uiMessage(w http.ResponseWriter, r *http.Request, p principal) (*page, error) {
	return h.messagePage(r, r.PathValue("bizID"), pathKey(r, r.PathValue("key")))
}

// uiAction runs a message action from its form. A refused action shows the
// message again with the reason.
func (h *handler) uiAction(w http.ResponseWriter, r *http.Request) {
	h.post(true, func(w http.ResponseWriter, r *http.Request, p principal) (string, error) {
		bizID := r.PathValue("bizID")
		key, action := splitAction(r.PathValue("rest"))
		if key = pathKey(r, key); key == "" {
			return "", &apiError{http.StatusNotFound, "no such page: " + r.URL.Path}
		}
		if err := messageRef(bizID, key); err != nil {
			return "", err
		}
		fail := func(err error) (string, error) {
			code, msg := classify(err)
			if code >= 500 {
				return "", err
			}
			pg, perr := h.messagePage(r, bizID, key)
			if perr != nil {
				return "", err
			}
			pg.code, pg.Error = code, msg
			h.render(w, p, pg)
			return "", nil
		}
		kind, err := actionKind(action, r.PostForm.Get("decision"))
		if err != nil {
			return fail(err)
		}
		reason, err := checkReason(r.PostForm.Get("reason"))
		if err != nil {
			return fail(err)
		}
		res, err := h.act(r, p, bizID, key, kind, reason)
		if err != nil {
			return fail(err)
		}
		q := url.Values{"done": {res.Action}}
		if res.HandedOff {
			q.Set("handed_off", "1")
		}
		to := uiMsgURL(bizID, key)
		if strings.Contains(to, "?") {
			to += "&" + q.Encode()
		} else {
			to += "?" + q.Encode()
		}
		return to, nil
	})(w, r)
}

func (h *handler) uiBizRetry(w http.ResponseWriter, r *http.Request, p principal) (string, error) {
	bizID := r.PathValue("bizID")
	if bizID == "" || strings.Contains(bizID, ":") {
		return "", badRequest("bizID %q: empty or contains ':'", bizID)
	}
	reason, err := checkReason(r.PostForm.Get("reason"))
	if err != nil {
		return "", err
	}
	if _, err := h.bizRetry(r, p, bizID, reason); err != nil {
		return "", err
	}
	return "/ui/messages?biz_id=" + url.QueryEscape(bizID), nil
}

// uiDLQ lists a lane's dead letters (?lane=NAME; absent or empty: the
// default lane's), with links to the other lanes.
func (h *handler) uiDLQ(w http.ResponseWriter, r *http.Request, p principal) (*page, error) {
	q := r.URL.Query()
	lane := q.Get("lane")
	title := "Dead letters" + ofLane(lane)
	data := map[string]any{"Lane": lane, "Lanes": h.laneNames()}
	if lane == "" && h.dlq == nil {
		data["Unavailable"] = errNoDLQ.msg
		return &page{tmpl: "dlq", Title: title, Data: data}, nil
	}
	l, err := h.dlqList(r, lane, q.Get("limit"), q.Get("cursor"))
	if err != nil {
		return nil, err
	}
	limit, _ := h.limit(q.Get("limit"))
	data["Records"], data["Next"], data["Preview"], data["MaxBytes"], data["Limit"] = l.Records, l.Next, l.PreviewBytes, l.MaxBytes, limit
	pg := &page{tmpl: "dlq", Title: title, Data: data}
	if rp := q.Get("replayed"); rp != "" && p.checkFlash(q.Get("flash"), rp, q.Get("key"), lane) {
		pg.Flash = "Replayed " + rp + " to the control topic."
		if lane != "" {
			pg.Flash = "Replayed " + rp + " to the control topic of lane " + lane + "."
		}
		if q.Get("key") != "" {
			pg.Flash += " Written to the audit log of " + q.Get("key") + "."
		}
	}
	return pg, nil
}

// uiBlocked lists the blocked order keys (?biz_id= for one bizID).
func (h *handler) uiBlocked(w http.ResponseWriter, r *http.Request, _ principal) (*page, error) {
	bs, err := h.blocked(r, strings.TrimSpace(r.URL.Query().Get("biz_id")), 200)
	if err != nil {
		return nil, err
	}
	return &page{tmpl: "blocked", Title: "Blocked order keys", Data: map[string]any{"Keys": bs.Keys}}, nil
}

// uiDLQRecord shows one whole dead-letter record.
func (h *handler) uiDLQRecord(w http.ResponseWriter, r *http.Request, p principal) (*page, error) {
	lane := r.URL.Query().Get("lane")
	rec, err := h.dlqRecord(r, lane, r.PathValue("partition"), r.PathValue("offset"))
	if err != nil {
		return nil, err
	}
	return &page{tmpl: "dlqrecord", Title: fmt.Sprintf("Dead letter %d/%d%s", rec.Partition, rec.Offset, ofLane(lane)), Data: map[string]any{"R": rec}}, nil
}

func (h *handler) uiDLQReplay(w http.ResponseWriter, r *http.Request, p principal) (string, error) {
	partition, offset, err := parsePosition(r.PathValue("partition"), r.PathValue("offset"))
	if err != nil {
		return "", err
	}
	reason, fix, err := checkReplay(adminapi.DLQReplayRequest{Reason: r.PostForm.Get("reason"), Topic: r.PostForm.Get("topic")})
	if err != nil {
		return "", err
	}
	// The lane is in the form's action (?lane=), as on the page.
	lane := r.URL.Query().Get("lane")
	res, err := h.dlqReplay(r, p, lane, partition, offset, reason, fix)
	if err != nil {
		return "", err
	}
	q := url.Values{"replayed": {fmt.Sprintf("%d/%d", partition, offset)}}
	if res.Known {
		q.Set("key", res.Key)
	}
	if lane != "" {
		q.Set("lane", lane)
	}
	// The banner's text is signed for this session: a link made elsewhere
	// cannot put words in it.
	q.Set("flash", p.flash(q.Get("replayed"), q.Get("key"), lane))
	return "/ui/dlq?" + q.Encode(), nil
}

// uiTraceID returns the OpenTelemetry trace id of a message, from the W3C
// traceparent the producer sent among its forwarded headers (clientlib
// adds it), or "" if it has none.
func uiTraceID(hs []adminapi.Header) string {
	for _, h := range hs {
		if h.Key == tracing.HeaderTraceparent && h.Value != nil {
			return tracing.TraceID([]envelope.Header{{Key: h.Key, Value: []byte(*h.Value)}})
		}
	}
	return ""
}
