package checkback

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSign(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_700_000_000, 0)
	// Independent vector (Python hmac): HMAC-SHA256("k", `1700000000.POST./a.B/m.[1,"x"]`).
	require.Equal(t, "t=1700000000,v1=c676b6ecaea6ddfb8a6d11ba32b47a73387579680cb96dbba6909297f4ec6284",
		Sign([]byte("k"), at, "POST", "/a.B/m", []byte(`[1,"x"]`)))
}

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	secrets := [][]byte{[]byte("old"), []byte("s3cret")}
	const target = "/cb?bizID=1&messageKey=k"
	sign := func(secret string, at time.Time, method, target, body string) string {
		return Sign([]byte(secret), at, method, target, []byte(body))
	}
	for _, tc := range []struct {
		name, header string
		want         error
	}{
		{"good", sign("s3cret", now, "GET", target, ""), nil},
		{"older secret", sign("old", now, "GET", target, ""), nil},
		{"two v1, one good", sign("s3cret", now, "GET", target, "") + ",v1=00ff", nil},
		{"within skew", sign("s3cret", now.Add(-4*time.Minute), "GET", target, ""), nil},
		{"missing", "", ErrNoSignature},
		{"wrong secret", sign("nope", now, "GET", target, ""), ErrBadSignature},
		{"other target", sign("s3cret", now, "GET", "/cb?bizID=1&messageKey=j", ""), ErrBadSignature},
		{"other method", sign("s3cret", now, "POST", target, ""), ErrBadSignature},
		{"other body", sign("s3cret", now, "GET", target, "x"), ErrBadSignature},
		{"stale", sign("s3cret", now.Add(-6*time.Minute), "GET", target, ""), ErrStale},
		{"future", sign("s3cret", now.Add(6*time.Minute), "GET", target, ""), ErrStale},
		{"not hex", "t=" + strconv.FormatInt(now.Unix(), 10) + ",v1=zz", ErrBadSignature},
		{"bad time", "t=abc,v1=00", ErrBadSignature},
		{"no v1", "t=" + strconv.FormatInt(now.Unix(), 10), ErrBadSignature},
		{"no =", "garbage", ErrBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Verify(secrets, tc.header, now, 5*time.Minute, "GET", target, nil)
			if tc.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.want)
			}
		})
	}
}
