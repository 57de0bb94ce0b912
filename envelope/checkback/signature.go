package checkback

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the request header carrying the check-back signature.
const SignatureHeader = "EC-Signature"

// The Triple headers a v2 signature covers.
const (
	HeaderTriVersion = "tri-service-version"
	HeaderTriGroup   = "tri-service-group"
)

// Default windows of Verify: a signature is accepted from DefaultMaxAge in
// the past to DefaultMaxFuture in the future of the receiver's clock.
const (
	DefaultMaxAge    = 5 * time.Minute
	DefaultMaxFuture = 30 * time.Second
)

// Errors of Verify.
var (
	ErrNoSignature  = errors.New("missing EC-Signature")
	ErrBadSignature = errors.New("bad EC-Signature")
	ErrStale        = errors.New("EC-Signature timestamp outside the allowed window")
	// ErrV1Refused: the header carries only v1 signatures and the receiver
	// does not accept v1.
	ErrV1Refused = errors.New("EC-Signature has no v2 signature (v1 is not accepted)")
)

// Signed is what a v2 signature covers: everything that selects the message
// asked about and where the call goes.
type Signed struct {
	// Method is GET or POST.
	Method string
	// Host is the Host header as sent (host:port); it is compared in lower
	// case, with a trailing ":80" or ":443" dropped.
	Host string
	// Target is the request target as sent: escaped path, then "?" and the
	// raw query when there is one.
	Target string
	// TriVersion and TriGroup are the tri-service-version and
	// tri-service-group headers ("" when absent).
	TriVersion string
	TriGroup   string
	// Body is the raw request body (empty for GET).
	Body []byte
}

// Signed is what the v2 signature of r covers.
func (r Request) Signed() Signed {
	return Signed{
		Method: r.Method, Host: r.URL.Host, Target: r.Target(),
		TriVersion: r.Header.Get(HeaderTriVersion), TriGroup: r.Header.Get(HeaderTriGroup),
		Body: r.Body,
	}
}

// SignedRequest is what the v2 signature of a received request covers;
// body is the request body as read. Multiple values of a Triple header are
// joined with ",".
func SignedRequest(r *http.Request, body []byte) Signed {
	target := r.RequestURI
	if target == "" {
		target = r.URL.RequestURI()
	}
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	return Signed{
		Method: r.Method, Host: host, Target: target,
		TriVersion: strings.Join(r.Header.Values(HeaderTriVersion), ","),
		TriGroup:   strings.Join(r.Header.Values(HeaderTriGroup), ","),
		Body:       body,
	}
}

// Canonical returns the string a v2 signature is the HMAC-SHA256 of, for
// the timestamp t (unix seconds): eight lines joined by "\n", no trailing
// newline:
//
//	v2
//	<t>
//	<METHOD>
//	<host>
//	<request target>
//	<tri-service-version>
//	<tri-service-group>
//	<lowercase hex SHA-256 of the body>
//
// The host is lower-cased with a trailing ":80" or ":443" dropped. No
// field may hold a CR or LF (HTTP does not carry them in these places);
// ok is false if one does.
func (s Signed) Canonical(t int64) (canonical string, ok bool) {
	host := strings.ToLower(s.Host)
	if h, ok := strings.CutSuffix(host, ":80"); ok {
		host = h
	} else if h, ok := strings.CutSuffix(host, ":443"); ok {
		host = h
	}
	sum := sha256.Sum256(s.Body)
	fields := [...]string{"v2", strconv.FormatInt(t, 10), s.Method, host, s.Target, s.TriVersion, s.TriGroup, hex.EncodeToString(sum[:])}
	for _, f := range fields {
		if strings.ContainsAny(f, "\r\n") {
			return "", false
		}
	}
	return strings.Join(fields[:], "\n"), true
}

// Sign returns the EC-Signature header value of a request:
//
//	t=<unix seconds>,v2=<hex HMAC-SHA256(secret, s.Canonical(t))>
//
// A field holding CR or LF (which HTTP cannot send) yields a header no
// receiver accepts.
func Sign(secret []byte, at time.Time, s Signed) string {
	t := at.Unix()
	return "t=" + strconv.FormatInt(t, 10) + ",v2=" + hex.EncodeToString(macV2(secret, t, s))
}

// SignWithV1 returns Sign's header with the legacy v1 signature added,
// "t=<t>,v2=<hex>,v1=<hex>", for receivers not yet upgraded (they read v1
// and skip v2). v1 is the HMAC-SHA256 of "<t>.<METHOD>.<target>.<body>",
// which is ambiguous (one request's signature can be moved onto another)
// and covers neither the Host nor the Triple headers: send it only while
// producers move to v2.
func SignWithV1(secret []byte, at time.Time, s Signed) string {
	t := strconv.FormatInt(at.Unix(), 10)
	return Sign(secret, at, s) + ",v1=" + hex.EncodeToString(macV1(secret, t, s.Method, s.Target, s.Body))
}

// VerifyOptions says what Verify accepts.
type VerifyOptions struct {
	// Secrets are the accepted secrets (several while rotating).
	Secrets [][]byte
	// Now is the receiver's clock reading.
	Now time.Time
	// MaxAge is how far in the past the timestamp may be (default
	// DefaultMaxAge), MaxFuture how far in the future (default
	// DefaultMaxFuture).
	MaxAge    time.Duration
	MaxFuture time.Duration
	// AcceptV1 also accepts the legacy v1 signature (see SignWithV1).
	AcceptV1 bool
}

// Verified is an accepted signature.
type Verified struct {
	// At is the signed timestamp.
	At time.Time
	// MAC is the matching signature, lowercase hex.
	MAC string
	// Key is the replay-cache key of the request: the SHA-256 (lowercase
	// hex) of what the matching signature version covers (v2: the
	// canonical request; v1: the timestamp, method, request target and
	// body), the same whichever entry of the header matched. A request
	// whose Key was seen is a replay. (Keyed by MAC, a request captured
	// with "t,v2,v1" and sent again with "t,v1" alone would pass as new.)
	Key string
	// V1Key is the key of what a v1 signature covers, for a v2 request
	// too (for a v1 request it is Key). A receiver that accepts v1
	// remembers it as well, so that the v1 entry of a request it answered
	// cannot be used again, with or without another Host.
	V1Key string
	// Version is 2, or 1 for an accepted legacy signature.
	Version int
}

// replayKeys are Verified.Key and V1Key of a request signed at t,
// verified by a signature of version.
func replayKeys(version int, t int64, s Signed) (key, v1Key string) {
	h := sha256.New()
	h.Write([]byte("v1\x00" + strconv.FormatInt(t, 10)))
	for _, f := range [...]string{s.Method, s.Target} {
		h.Write([]byte{0})
		h.Write([]byte(f))
	}
	h.Write([]byte{0})
	h.Write(s.Body)
	v1Key = hex.EncodeToString(h.Sum(nil))
	if version == 1 {
		return v1Key, v1Key
	}
	c, _ := s.Canonical(t) // a v2 signature matched: it is ok
	sum := sha256.Sum256([]byte(c))
	return hex.EncodeToString(sum[:]), v1Key
}

// Verify checks an EC-Signature header against the received request s.
// The header holds "t=<unix seconds>" and any number of "v2=<hex>" (and
// "v1=<hex>") entries, comma-separated; one matching entry for one secret
// is enough. Unknown entries are skipped. The timestamp must lie within
// [Now-MaxAge, Now+MaxFuture]. Replays within that window are the caller's
// to refuse, keyed by Verified.Key (and V1Key when v1 is accepted), not by
// the MAC that matched: a header may carry several.
func Verify(header string, s Signed, o VerifyOptions) (Verified, error) {
	if header == "" {
		return Verified{}, ErrNoSignature
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.MaxFuture <= 0 {
		o.MaxFuture = DefaultMaxFuture
	}
	var ts string
	var v2, v1 [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Verified{}, ErrBadSignature
		}
		switch k {
		case "t":
			if ts != "" {
				return Verified{}, ErrBadSignature
			}
			ts = v
		case "v2", "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				continue // never matches; another entry may
			}
			if k == "v2" {
				v2 = append(v2, b)
			} else {
				v1 = append(v1, b)
			}
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(v2)+len(v1) == 0 {
		return Verified{}, ErrBadSignature
	}
	if len(v2) == 0 && !o.AcceptV1 {
		return Verified{}, ErrV1Refused
	}
	at := time.Unix(t, 0)
	if d := o.Now.Sub(at); d > o.MaxAge || d < -o.MaxFuture {
		return Verified{}, ErrStale
	}
	for _, secret := range o.Secrets {
		if want := macV2(secret, t, s); want != nil {
			for _, m := range v2 {
				if hmac.Equal(m, want) {
					key, v1Key := replayKeys(2, t, s)
					return Verified{At: at, MAC: hex.EncodeToString(m), Key: key, V1Key: v1Key, Version: 2}, nil
				}
			}
		}
		if !o.AcceptV1 || len(v1) == 0 {
			continue
		}
		want := macV1(secret, ts, s.Method, s.Target, s.Body)
		for _, m := range v1 {
			if hmac.Equal(m, want) {
				key, v1Key := replayKeys(1, t, s)
				return Verified{At: at, MAC: hex.EncodeToString(m), Key: key, V1Key: v1Key, Version: 1}, nil
			}
		}
	}
	return Verified{}, ErrBadSignature
}

// macV2 is the v2 HMAC, or nil when s cannot be put in canonical form.
func macV2(secret []byte, t int64, s Signed) []byte {
	c, ok := s.Canonical(t)
	if !ok {
		return nil
	}
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(c))
	return h.Sum(nil)
}

// macV1 is the legacy v1 HMAC of "<t>.<METHOD>.<target>.<body>".
func macV1(secret []byte, t, method, target string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(t))
	h.Write([]byte{'.'})
	h.Write([]byte(method))
	h.Write([]byte{'.'})
	h.Write([]byte(target))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}
