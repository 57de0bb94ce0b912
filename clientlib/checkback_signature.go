package clientlib

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// signatureHeader carries the center's check-back signature:
//
//	EC-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<METHOD>.<request target>.<body>")>
//
// It is defined in the verifier package documentation; this is the
// receiving side.
const signatureHeader = "EC-Signature"

var (
	errNoSignature  = errors.New("missing EC-Signature")
	errBadSignature = errors.New("bad EC-Signature")
	errStale        = errors.New("EC-Signature timestamp outside the allowed skew")
)

func verifySignature(secrets [][]byte, header string, now time.Time, skew time.Duration,
	method, target string, body []byte) error {
	if header == "" {
		return errNoSignature
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return errBadSignature
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil {
				return errBadSignature
			}
			sigs = append(sigs, b)
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return errBadSignature
	}
	if d := now.Sub(time.Unix(t, 0)); d > skew || d < -skew {
		return errStale
	}
	for _, secret := range secrets {
		h := hmac.New(sha256.New, secret)
		h.Write([]byte(ts + "." + method + "." + target + "."))
		h.Write(body)
		want := h.Sum(nil)
		for _, s := range sigs {
			if hmac.Equal(s, want) {
				return nil
			}
		}
	}
	return errBadSignature
}
