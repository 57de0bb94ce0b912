package center

import (
	"net/http"
	"time"

	"github.com/eventcenter/eventcenter/app/config"
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
	sem := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
			h.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many admin requests at once (http.max_concurrent): try again", http.StatusServiceUnavailable)
		}
	})
}
