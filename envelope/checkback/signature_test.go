package checkback

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSignV2Vector(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_700_000_000, 0)
	s := Signed{Method: "POST", Host: "svc:50051", Target: "/a.B/verifyMessage", TriVersion: "1.0.0", TriGroup: "order", Body: []byte(`[1001,"c1"]`)}
	c, ok := s.Canonical(at.Unix())
	require.True(t, ok)
	require.Equal(t, "v2\n1700000000\nPOST\nsvc:50051\n/a.B/verifyMessage\n1.0.0\norder\n"+
		"0e97dc6000fe3c5bff95ec1fcae8a728476b1e9602dee8ac5f221022cbd5bb96", c)
	// Independent vectors (Python hmac): v2 over the canonical string above,
	// v1 over "1700000000.POST./a.B/verifyMessage.[1001,"c1"]".
	require.Equal(t, "t=1700000000,v2=a2374a93472c3aec4b74fd237badb03efc067a1e7577fada5444ae10bf843ed0",
		Sign([]byte("k"), at, s))
	require.Equal(t, "t=1700000000,v2=a2374a93472c3aec4b74fd237badb03efc067a1e7577fada5444ae10bf843ed0"+
		",v1=16b79822ef22ddc401e6c69bbc6320049487c386bd1e7593a5592f20ea52bfa9",
		SignWithV1([]byte("k"), at, s))
}

func TestCanonicalHost(t *testing.T) {
	t.Parallel()
	canon := func(host string) string {
		c, ok := Signed{Method: "GET", Host: host, Target: "/"}.Canonical(1)
		require.True(t, ok)
		return strings.Split(c, "\n")[3]
	}
	require.Equal(t, "svc", canon("SVC:80"))
	require.Equal(t, "svc", canon("svc:443"))
	require.Equal(t, "svc:8080", canon("svc:8080"))
	require.Equal(t, "[::1]:4443", canon("[::1]:4443"))
	for _, s := range []Signed{{Method: "GET", Host: "h\n", Target: "/"}, {Method: "GET", Host: "h", Target: "/", TriGroup: "a\rb"}} {
		_, ok := s.Canonical(1)
		require.False(t, ok)
		require.ErrorIs(t, verifyAt(t, Sign([]byte("k"), time.Unix(1, 0), s), s, time.Unix(1, 0), false), ErrBadSignature)
	}
}

func verifyAt(t *testing.T, header string, s Signed, now time.Time, v1 bool) error {
	t.Helper()
	_, err := Verify(header, s, VerifyOptions{Secrets: [][]byte{[]byte("old"), []byte("s3cret")}, Now: now, AcceptV1: v1})
	return err
}

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	base := Signed{Method: "POST", Host: "svc:50051", Target: "/a.B/verifyMessage", TriVersion: "1.0.0", TriGroup: "order", Body: []byte(`[1,"k"]`)}
	with := func(f func(*Signed)) Signed { s := base; f(&s); return s }
	sign := func(secret string, at time.Time, s Signed) string { return Sign([]byte(secret), at, s) }
	ts := strconv.FormatInt(now.Unix(), 10)
	both := SignWithV1([]byte("s3cret"), now, base)
	v1part := both[strings.Index(both, ",v1="):]
	for _, tc := range []struct {
		name, header string
		want         error
	}{
		{"good", sign("s3cret", now, base), nil},
		{"older secret", sign("old", now, base), nil},
		{"two v2, one good", sign("s3cret", now, base) + ",v2=00ff", nil},
		{"unknown entry skipped", sign("s3cret", now, base) + ",v9=zz", nil},
		{"4m59s old", sign("s3cret", now.Add(-299*time.Second), base), nil},
		{"30s ahead", sign("s3cret", now.Add(30*time.Second), base), nil},
		{"missing", "", ErrNoSignature},
		{"wrong secret", sign("nope", now, base), ErrBadSignature},
		{"other host", sign("s3cret", now, with(func(s *Signed) { s.Host = "evil:50051" })), ErrBadSignature},
		{"other port", sign("s3cret", now, with(func(s *Signed) { s.Host = "svc:50052" })), ErrBadSignature},
		{"other tri version", sign("s3cret", now, with(func(s *Signed) { s.TriVersion = "2.0.0" })), ErrBadSignature},
		{"other tri group", sign("s3cret", now, with(func(s *Signed) { s.TriGroup = "" })), ErrBadSignature},
		{"version and group swapped", sign("s3cret", now, with(func(s *Signed) { s.TriVersion, s.TriGroup = s.TriGroup, s.TriVersion })), ErrBadSignature},
		{"other target", sign("s3cret", now, with(func(s *Signed) { s.Target = "/a.B/other" })), ErrBadSignature},
		{"other method", sign("s3cret", now, with(func(s *Signed) { s.Method = "GET" })), ErrBadSignature},
		{"other body", sign("s3cret", now, with(func(s *Signed) { s.Body = []byte(`[1,"j"]`) })), ErrBadSignature},
		{"5m01s old", sign("s3cret", now.Add(-301*time.Second), base), ErrStale},
		{"31s ahead", sign("s3cret", now.Add(31*time.Second), base), ErrStale},
		{"6m ahead", sign("s3cret", now.Add(6*time.Minute), base), ErrStale},
		{"v1 only, refused", "t=" + ts + v1part, ErrV1Refused},
		{"v1 next to a wrong v2", "t=" + ts + ",v2=" + strings.Repeat("00", 32) + v1part, ErrBadSignature},
		{"not hex", "t=" + ts + ",v2=zz", ErrBadSignature},
		{"two t", "t=" + ts + "," + sign("s3cret", now, base), ErrBadSignature},
		{"bad time", "t=abc,v2=00", ErrBadSignature},
		{"no v2", "t=" + ts, ErrBadSignature},
		{"no =", "garbage", ErrBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := verifyAt(t, tc.header, base, now, false)
			if tc.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.want)
			}
		})
	}
}

// The legacy v1 form is accepted only with AcceptV1, and then it is as
// weak as it always was: the review's forgery moves a GET's query tail into
// the body. v2 hashes the body and separates the fields, so the same move
// breaks it.
func TestVerifyV1AndTheForgery(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	asked := Signed{Method: "GET", Host: "producer:8090", Target: "/cb?bizID=1&messageKey=k.2"}
	forged := Signed{Method: "GET", Host: "producer:8090", Target: "/cb?bizID=1&messageKey=k", Body: []byte("2.")}

	both := SignWithV1([]byte("s3cret"), now, asked)
	v1only := "t=" + strconv.FormatInt(now.Unix(), 10) + both[strings.Index(both, ",v1="):]
	require.ErrorIs(t, verifyAt(t, v1only, asked, now, false), ErrV1Refused)
	v, err := Verify(v1only, asked, VerifyOptions{Secrets: [][]byte{[]byte("s3cret")}, Now: now, AcceptV1: true})
	require.NoError(t, err)
	require.Equal(t, 1, v.Version)
	require.NoError(t, verifyAt(t, v1only, forged, now, true), "v1 cannot tell the two apart: hence GET bodies are refused")

	v2 := Sign([]byte("s3cret"), now, asked)
	require.NoError(t, verifyAt(t, v2, asked, now, false))
	require.ErrorIs(t, verifyAt(t, v2, forged, now, false), ErrBadSignature)
	require.ErrorIs(t, verifyAt(t, v2, forged, now, true), ErrBadSignature)
	// With both entries sent, an upgraded receiver matches v2.
	v, err = Verify(both, asked, VerifyOptions{Secrets: [][]byte{[]byte("s3cret")}, Now: now, AcceptV1: true})
	require.NoError(t, err)
	require.Equal(t, 2, v.Version)
	require.Equal(t, v2[strings.Index(v2, "v2=")+3:], v.MAC)
}

// What the sender signs (Request.Signed) is what the receiver reads back
// (SignedRequest) for every protocol, through a real HTTP round trip.
func TestSignedRoundTrip(t *testing.T) {
	t.Parallel()
	got := make(chan Signed, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 1024)
		n, _ := r.Body.Read(b)
		got <- SignedRequest(r, b[:n])
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, raw := range []string{
		"http://" + host + "/cb/x?tenant=a%20b",
		"tri://" + host + "/com.example.TxChecker/verifyMessage?version=1.0.0&group=order",
		"jsonrpc://" + host + "/com.example.TxChecker",
	} {
		ep, err := ParseEndpoint(raw)
		require.NoError(t, err)
		r := ep.Request(Question{BizID: "7", MessageKey: "k 1/2", Attempt: 3, ID: 9})
		req, err := http.NewRequestWithContext(t.Context(), r.Method, r.URL.String(), strings.NewReader(string(r.Body)))
		require.NoError(t, err)
		req.Header = r.Header.Clone()
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		s := <-got
		want := r.Signed()
		if len(want.Body) == 0 {
			want.Body = nil
		}
		if len(s.Body) == 0 {
			s.Body = nil
		}
		require.Equal(t, want, s, raw)
		require.NotEmpty(t, s.Host)
	}
}
