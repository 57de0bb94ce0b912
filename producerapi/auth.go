package producerapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Token is one producer token.
type Token struct {
	Name  string
	Token string
	// BizIDs the token may send for and read; "*" is every bizID.
	BizIDs []string
	// Rate (envelopes per second) and Burst of the token's bucket; 0
	// means Config.Rate and Config.Burst.
	Rate  float64
	Burst int
}

// allows reports whether the token may act for bizID.
func (t *Token) allows(bizID string) bool {
	return slices.Contains(t.BizIDs, "*") || slices.Contains(t.BizIDs, bizID)
}

// insecureName is the principal of requests without a token in insecure
// mode: they share one bucket.
const insecureName = "(insecure)"

// authenticate finds the request's token. It compares the hash of every
// configured token in constant time, whatever matches.
func (h *Handler) authenticate(r *http.Request) (Token, bool) {
	if h.open() {
		return Token{Name: insecureName, BizIDs: []string{"*"}}, true
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return Token{}, false
	}
	want := sha256.Sum256([]byte(tok))
	found := -1
	ts := h.tokens()
	for i := range ts {
		got := sha256.Sum256([]byte(ts[i].Token))
		if subtle.ConstantTimeCompare(want[:], got[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Token{}, false
	}
	return ts[found], true
}

// open tells whether requests need no token: insecure mode without
// tokens.
func (h *Handler) open() bool { return h.cfg.Insecure && len(h.tokens()) == 0 }

func (h *Handler) tokens() []Token {
	if h.cfg.TokenSource != nil {
		return h.cfg.TokenSource()
	}
	return h.cfg.Tokens
}

// limiters keeps one token bucket per token name; a token whose rate
// changes (a reloaded configuration) keeps its bucket with the new limits.
type limiters struct {
	mu    sync.Mutex
	rate  float64
	burst int
	m     map[string]*rate.Limiter
}

func newLimiters(r float64, burst int) *limiters {
	return &limiters{rate: r, burst: burst, m: map[string]*rate.Limiter{}}
}

func (l *limiters) get(t *Token) *rate.Limiter {
	r, b := t.Rate, t.Burst
	if r == 0 {
		r = l.rate
	}
	if b == 0 {
		b = l.burst
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[t.Name]
	if !ok {
		lim = rate.NewLimiter(rate.Limit(r), b)
		l.m[t.Name] = lim
		return lim
	}
	if lim.Limit() != rate.Limit(r) {
		lim.SetLimit(rate.Limit(r))
	}
	if lim.Burst() != b {
		lim.SetBurst(b)
	}
	return lim
}

// wait is how long until the token's bucket holds one envelope (0: it
// does now); nothing is taken. A batch asks it before reading its body.
func (l *limiters) wait(t *Token, now time.Time) time.Duration {
	lim := l.get(t)
	res := lim.ReserveN(now, 1)
	if !res.OK() {
		return 0 // a zero burst: take refuses it with the reason
	}
	d := res.DelayFrom(now)
	res.CancelAt(now)
	return d
}

// take takes n envelopes from the token's bucket at now. It returns 0 when
// they were taken, otherwise how long to wait before asking again (nothing
// is taken); tooMany is set when n exceeds the burst (waiting cannot help).
func (l *limiters) take(t *Token, n int, now time.Time) (wait time.Duration, tooMany bool) {
	lim := l.get(t)
	if n > lim.Burst() {
		return 0, true
	}
	res := lim.ReserveN(now, n)
	if !res.OK() {
		return 0, true
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d, false
	}
	return 0, false
}
