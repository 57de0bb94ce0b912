package admin

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventcenter/eventcenter/internal/httpguard"
	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
)

// Store is the part of store.Store the admin handler uses.
type Store interface {
	Apply(ctx context.Context, req store.ApplyRequest) (store.ApplyResult, error)
	Get(ctx context.Context, bizID, key string) (state.Message, error)
	List(ctx context.Context, f store.Filter) (store.Page, error)
	Counts(ctx context.Context) ([]store.Count, error)
	OldestPrepared(ctx context.Context) (map[string]time.Time, error)
	Audit(ctx context.Context, bizID, key string) ([]store.AuditEntry, error)
	AddAudit(ctx context.Context, e store.AuditEntry) error
	AuditLog(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, error)
	RetryNowBizID(ctx context.Context, bizID string, who store.Actor) (int, error)
}

// store.Store has everything the handler needs.
var _ Store = store.Store(nil)

// handsOff is what a store whose Apply is the forwarder's fast path
// (forwarder.FastPath) tells: sendable messages were handed over.
type handsOff interface{ HandsOff() bool }

type handler struct {
	cfg     Config
	st      Store
	dlq     DLQ
	auth    *auth
	log     *slog.Logger
	actions *prometheus.CounterVec
	pages   map[string]*template.Template
	mux     *http.ServeMux
}

// NewHandler returns the admin API (/api/v1/...) and console (/ui/...)
// handler. dlq may be nil: the dead-letter endpoints then answer 501.
func NewHandler(cfg Config, st Store, dlq DLQ) (http.Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("admin config: %w", err)
	}
	if st == nil {
		return nil, errors.New("admin: nil store")
	}
	cfg.setDefaults()
	a, err := newAuth(&cfg)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	h := &handler{
		cfg: cfg, st: st, dlq: dlq, auth: a, log: cfg.Logger,
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eventcenter_admin_actions_total",
			Help: "Operator actions through the admin API and console, by action and result (applied, noop, rejected, error).",
		}, []string{"action", "result"}),
		mux: http.NewServeMux(),
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(h.actions); err != nil {
			return nil, fmt.Errorf("admin: register metrics: %w", err)
		}
	}
	if h.pages, err = parsePages(); err != nil {
		return nil, fmt.Errorf("admin: parse templates: %w", err)
	}
	if len(cfg.Tokens) == 0 && !cfg.Insecure {
		h.log.Warn("admin API and console refuse every request: no admin tokens configured")
	}
	if a.open {
		h.log.Warn("admin API and console are open without authentication (insecure mode); only requests addressed to localhost, 127.0.0.1 or [::1] are answered")
	}
	h.routesAPI()
	h.routesUI()
	// Cross-origin state-changing browser requests are refused; reads are
	// not (the console's links may be opened from anywhere).
	out := httpguard.NewCrossOrigin(false).Handler(h.mux, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusForbidden, "cross-origin request refused")
	}))
	out = h.plainText(out)
	if a.open {
		out = loopbackHostOnly(out)
	}
	return out, nil
}

// openHostMsg is the answer of open mode to a request for another host.
const openHostMsg = "the admin API and console run without tokens (insecure mode) and answer only requests addressed to localhost, 127.0.0.1 or [::1]; Host %q refused (a page on another site may be reaching this server through DNS rebinding). Use http://127.0.0.1:<port>/, or configure admin tokens"

// loopbackHostOnly refuses requests whose Host is not a loopback name or
// address: without tokens, a web page whose name an attacker points at
// 127.0.0.1 (DNS rebinding) could otherwise read and act.
func loopbackHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !httpguard.LoopbackHost(r.Host) {
			msg := fmt.Sprintf(openHostMsg, r.Host)
			if strings.HasPrefix(r.URL.Path, "/api/") {
				writeError(w, http.StatusForbidden, msg)
			} else {
				http.Error(w, msg, http.StatusForbidden)
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

// apiError is an error with its HTTP status.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// classify turns an error into an HTTP status and message.
func classify(err error) (int, string) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae.code, ae.msg
	case errors.Is(err, store.ErrNotFound), errors.Is(err, state.ErrNoMessage):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, store.ErrWrongState):
		return http.StatusConflict, err.Error()
	case errors.Is(err, ErrDLQNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, ErrBadDLQCursor), errors.Is(err, ErrBadReplayFix):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, ErrReplayInvalid):
		return http.StatusConflict, err.Error()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, store.ErrNotMigrated):
		return http.StatusServiceUnavailable, err.Error()
	default:
		return http.StatusInternalServerError, err.Error()
	}
}

func (h *handler) now() time.Time { return h.cfg.Now() }
