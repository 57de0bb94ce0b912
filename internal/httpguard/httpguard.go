package httpguard

import (
	"errors"
	"mime"
	"net"
	"net/http"
	"strings"
	"unicode/utf8"
)

// LoopbackHost tells whether a Host header names this machine: localhost,
// 127.0.0.0/8 or ::1, with any port.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CrossOrigin refuses cross-origin browser requests with
// http.CrossOriginProtection's rule: Sec-Fetch-Site other than
// same-origin or none, or, without it, an Origin whose host is not the
// request's Host. Requests from non-browser clients (neither header) pass.
type CrossOrigin struct {
	cop *http.CrossOriginProtection
	// all also refuses GET, HEAD and OPTIONS, which the protection lets
	// through (it guards state changes only).
	all bool
}

// NewCrossOrigin returns the check; allMethods refuses cross-origin GET,
// HEAD and OPTIONS too.
func NewCrossOrigin(allMethods bool) *CrossOrigin {
	return &CrossOrigin{cop: http.NewCrossOriginProtection(), all: allMethods}
}

// Check returns an error for a cross-origin browser request, nil
// otherwise.
func (c *CrossOrigin) Check(r *http.Request) error {
	if c.all {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			// The protection exempts these methods: ask it about the same
			// request as a POST (a shallow copy; nothing is read from it but
			// the method and headers).
			probe := *r
			probe.Method = http.MethodPost
			r = &probe
		}
	}
	return c.cop.Check(r)
}

// Handler serves next, answering cross-origin browser requests with deny.
func (c *CrossOrigin) Handler(next, deny http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.Check(r) != nil {
			deny.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Slots bounds the requests served at once.
type Slots chan struct{}

// NewSlots returns n slots.
func NewSlots(n int) Slots { return make(Slots, n) }

// TryAcquire takes a slot if one is free; the caller calls Release after.
func (s Slots) TryAcquire() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

// Release frees a slot taken by TryAcquire.
func (s Slots) Release() { <-s }

// Limit serves at most n requests at once through next; the rest are
// answered by busy at once (not queued). busy should answer 503 with
// Retry-After.
func Limit(n int, next, busy http.Handler) http.Handler {
	slots := NewSlots(n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slots.TryAcquire() {
			busy.ServeHTTP(w, r)
			return
		}
		defer slots.Release()
		next.ServeHTTP(w, r)
	})
}

// BadText tells whether s cannot be stored as text: a NUL byte or invalid
// UTF-8.
func BadText(s string) bool { return !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 }

// ErrBadText is wrapped by TextErr's errors.
var ErrBadText = errors.New("contains a NUL byte or invalid UTF-8")

// TextError says which part of a request is not text.
type TextError struct {
	// Part is "path", "a query parameter name" or `query parameter "name"`.
	Part string
}

func (e *TextError) Error() string { return e.Part + ": " + ErrBadText.Error() }

// Unwrap returns ErrBadText.
func (e *TextError) Unwrap() error { return ErrBadText }

// TextErr is why a request's path or query parameters cannot be used (a
// *TextError), or nil.
func TextErr(r *http.Request) error {
	if BadText(r.URL.Path) {
		return &TextError{Part: "path"}
	}
	for k, vs := range r.URL.Query() {
		if BadText(k) {
			return &TextError{Part: "a query parameter name"}
		}
		for _, v := range vs {
			if BadText(v) {
				return &TextError{Part: "query parameter " + quote(k)}
			}
		}
	}
	return nil
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// JSONContentType tells whether a Content-Type header value is JSON:
// application/json or application/<something>+json, with any parameters.
func JSONContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}
