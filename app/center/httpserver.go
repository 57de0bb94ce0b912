package center

import (
	"net/http"
	"time"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/internal/httpguard"
)

// newHTTPServer is the server of the admin API, console, metrics and
// probes. Besides the header timeout it bounds a whole request's read
// (a body trickled byte by byte is cut off), the answer's write, and idle
// keep-alive connections.
func newHTTPServer(cfg config.HTTP, handler http.Handler) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: min(10*time.Second, cfg.ReadTimeout),
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

// capRequests serves at most n requests at once through h; the rest are
// answered 503 at once (with Retry-After), not queued.
func capRequests(n int, h http.Handler) http.Handler {
	return httpguard.Limit(n, h, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many admin requests at once (http.max_concurrent): try again", http.StatusServiceUnavailable)
	}))
}
