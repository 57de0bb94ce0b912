package checkback

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the request header carrying the check-back signature.
const SignatureHeader = "EC-Signature"

// Errors of Verify.
var (
	ErrNoSignature  = errors.New("missing EC-Signature")
	ErrBadSignature = errors.New("bad EC-Signature")
	ErrStale        = errors.New("EC-Signature timestamp outside the allowed skew")
)

// Sign returns the EC-Signature header value for a request:
//
//	t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<METHOD>.<target>.<body>")>
//
// target is the request target as sent (escaped path, then "?" and the raw
// query when there is one).
func Sign(secret []byte, at time.Time, method, target string, body []byte) string {
	t := strconv.FormatInt(at.Unix(), 10)
	return "t=" + t + ",v1=" + hex.EncodeToString(mac(secret, t, method, target, body))
}

// Verify checks an EC-Signature header against any of secrets (several
// while rotating). The timestamp must be within skew of now.
func Verify(secrets [][]byte, header string, now time.Time, skew time.Duration,
	method, target string, body []byte) error {
	if header == "" {
		return ErrNoSignature
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrBadSignature
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil {
				return ErrBadSignature
			}
			sigs = append(sigs, b)
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(t, 0)); d > skew || d < -skew {
		return ErrStale
	}
	for _, secret := range secrets {
		want := mac(secret, ts, method, target, body)
		for _, s := range sigs {
			if hmac.Equal(s, want) {
				return nil
			}
		}
	}
	return ErrBadSignature
}

func mac(secret []byte, t, method, target string, body []byte) []byte {
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
