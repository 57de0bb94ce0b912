package verifier

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// SignatureHeader is the request header carrying the check-back signature
// (see the package documentation for its definition).
const SignatureHeader = "EC-Signature"

// Sign returns the EC-Signature header value for a request:
//
//	t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<METHOD>.<path?query>.<body>")>
//
// pathAndQuery is the request target as sent (escaped path, then "?" and the
// raw query when there is one).
func Sign(secret []byte, at time.Time, method, pathAndQuery string, body []byte) string {
	t := strconv.FormatInt(at.Unix(), 10)
	return "t=" + t + ",v1=" + hex.EncodeToString(mac(secret, t, method, pathAndQuery, body))
}

func mac(secret []byte, t, method, pathAndQuery string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(t))
	h.Write([]byte{'.'})
	h.Write([]byte(method))
	h.Write([]byte{'.'})
	h.Write([]byte(pathAndQuery))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}
