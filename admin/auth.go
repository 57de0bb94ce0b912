package admin

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// principal is who makes a request.
type principal struct {
	Name  string
	Scope string
	// key signs the principal's console session and form tokens.
	key []byte
	// expires is the session's end (console only).
	expires int64
}

// epochs holds, per token name, the console session epoch: a session
// cookie carries the epoch it was made in, and logging out moves the
// token's epoch on, so every cookie made before is refused. They are kept
// in the process: a restart forgets them (cookies made before a logout
// are then accepted again until their signed expiry), and each instance
// of a cluster keeps its own.
type epochs struct {
	mu sync.Mutex
	m  map[string]uint64
}

func (e *epochs) get(name string) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.m[name]
}

// bump ends every session of the token name made so far.
func (e *epochs) bump(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[string]uint64{}
	}
	e.m[name]++
}

func (p principal) canAct() bool { return p.Scope == ScopeAdmin }

type tokenEntry struct {
	name   string
	scope  string
	hash   [32]byte
	secret []byte
}

// auth checks bearer tokens and console sessions.
type auth struct {
	tokens       []tokenEntry
	source       func() []Token
	open         bool
	insecureUser string
	// openKey signs form tokens in open (insecure) mode.
	openKey []byte
	ttl     time.Duration
	now     func() time.Time
	epochs  epochs
}

func newAuth(cfg *Config) (*auth, error) {
	a := &auth{
		open:         len(cfg.Tokens) == 0 && cfg.Insecure,
		insecureUser: cfg.InsecureUser,
		ttl:          cfg.SessionTTL,
		now:          cfg.Now,
		openKey:      make([]byte, 32),
	}
	if _, err := rand.Read(a.openKey); err != nil {
		return nil, fmt.Errorf("make form key: %w", err)
	}
	a.tokens = entries(cfg.Tokens)
	a.source = cfg.TokenSource
	return a, nil
}

func entries(ts []Token) []tokenEntry {
	out := make([]tokenEntry, 0, len(ts))
	for _, t := range ts {
		out = append(out, tokenEntry{
			name: t.Name, scope: t.Scope,
			hash:   sha256.Sum256([]byte(t.Token)),
			secret: []byte(t.Token),
		})
	}
	return out
}

// current is the accepted tokens now.
func (a *auth) current() []tokenEntry {
	if a.source != nil {
		return entries(a.source())
	}
	return a.tokens
}

const noTokensMsg = "no admin tokens are configured: configure admin tokens (name, token, scope read|admin), or enable insecure mode for development"

// authError is why a request was not authenticated.
type authError struct {
	msg       string
	challenge string
}

// byToken finds the token in constant time (it compares every configured
// token's hash, whatever matches).
func (a *auth) byToken(tok string) (tokenEntry, bool) {
	h := sha256.Sum256([]byte(tok))
	found := -1
	tokens := a.current()
	for i := range tokens {
		if subtle.ConstantTimeCompare(h[:], tokens[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return tokenEntry{}, false
	}
	return tokens[found], true
}

// bearer authenticates an API request.
func (a *auth) bearer(r *http.Request) (principal, *authError) {
	if a.open {
		return principal{Name: a.insecureUser, Scope: ScopeAdmin, key: a.openKey}, nil
	}
	if len(a.current()) == 0 {
		return principal{}, &authError{msg: noTokensMsg, challenge: `Bearer realm="eventcenter"`}
	}
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return principal{}, &authError{msg: "missing bearer token (send Authorization: Bearer <token>)", challenge: `Bearer realm="eventcenter"`}
	}
	t, ok := a.byToken(strings.TrimSpace(tok))
	if !ok {
		return principal{}, &authError{msg: "invalid token", challenge: `Bearer realm="eventcenter", error="invalid_token"`}
	}
	return principal{Name: t.name, Scope: t.scope, key: t.secret}, nil
}

const sessionCookie = "ec_admin_session"

func mac(key []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

var b64 = base64.RawURLEncoding

// login checks a token typed into the console's login form and returns the
// session cookie for it.
func (a *auth) login(tok string, secure bool) (*http.Cookie, bool) {
	t, ok := a.byToken(strings.TrimSpace(tok))
	if !ok {
		return nil, false
	}
	exp := a.now().Add(a.ttl).Unix()
	es := strconv.FormatInt(exp, 10)
	eps := strconv.FormatUint(a.epochs.get(t.name), 10)
	v := b64.EncodeToString([]byte(t.name)) + "." + es + "." + eps + "." + b64.EncodeToString(mac(t.secret, "session", t.name, es, eps))
	// A browser-session cookie: the signed expiry inside it is what ends
	// the login (on the server's clock).
	return &http.Cookie{
		Name: sessionCookie, Value: v, Path: "/ui",
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode,
	}, true
}

// logout ends every console session of p's token (sessions are per token,
// not per browser: logging out in one browser logs out the others too).
func (a *auth) logout(p principal) {
	if a.open {
		return
	}
	a.epochs.bump(p.Name)
}

func logoutCookie(secure bool) *http.Cookie {
	return &http.Cookie{
		Name: sessionCookie, Value: "", Path: "/ui", MaxAge: -1,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode,
	}
}

// session authenticates a console request by its cookie. ok is false when
// the user must log in.
func (a *auth) session(r *http.Request) (principal, bool) {
	if a.open {
		return principal{Name: a.insecureUser, Scope: ScopeAdmin, key: a.openKey}, true
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return principal{}, false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 4 {
		return principal{}, false
	}
	nb, err1 := b64.DecodeString(parts[0])
	sig, err2 := b64.DecodeString(parts[3])
	exp, err3 := strconv.ParseInt(parts[1], 10, 64)
	epoch, err4 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || a.now().Unix() >= exp {
		return principal{}, false
	}
	name := string(nb)
	if epoch != a.epochs.get(name) {
		return principal{}, false // logged out since
	}
	for _, t := range a.current() {
		if t.name != name {
			continue
		}
		if hmac.Equal(sig, mac(t.secret, "session", name, parts[1], parts[2])) {
			return principal{Name: t.name, Scope: t.scope, key: t.secret, expires: exp}, true
		}
	}
	return principal{}, false
}

// formToken is the per-session token the console's forms carry.
func (p principal) formToken() string {
	return b64.EncodeToString(mac(p.key, "form", p.Name, strconv.FormatInt(p.expires, 10)))
}

func (p principal) checkFormToken(got string) bool {
	b, err := b64.DecodeString(got)
	if err != nil {
		return false
	}
	return hmac.Equal(b, mac(p.key, "form", p.Name, strconv.FormatInt(p.expires, 10)))
}

// flash signs the parts of a success banner for p's session, so that only
// a redirect the handler made shows it.
func (p principal) flash(parts ...string) string {
	return b64.EncodeToString(mac(p.key, append([]string{"flash", p.Name, strconv.FormatInt(p.expires, 10)}, parts...)...))
}

func (p principal) checkFlash(got string, parts ...string) bool {
	b, err := b64.DecodeString(got)
	if err != nil || len(got) == 0 {
		return false
	}
	return hmac.Equal(b, mac(p.key, append([]string{"flash", p.Name, strconv.FormatInt(p.expires, 10)}, parts...)...))
}
