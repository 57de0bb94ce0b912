package verifier

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// Every protocol goes through the same signing: the v2 signature the
// caller sends verifies against the request as the producer receives it
// (Host, target, Triple headers and body included), with v1 only when
// SignV1 asks for it, and then the v1 entry alone verifies for a v1-only
// receiver.
func TestCallerSignsEveryProtocolV2(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	type got struct {
		header string
		signed checkback.Signed
	}
	var gots []got
	p := newProducer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		gots = append(gots, got{r.Header.Get(checkback.SignatureHeader), checkback.SignedRequest(r, b)})
		mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		reply(w, r, checkback.DecisionCommit)
	})
	c := testCaller(t, func() time.Time { return now })
	eps := []string{
		p.endpoint("http", "/cb?tenant=a"),
		p.endpoint("tri", "/com.example.TxChecker/verifyMessage?version=1.0.0&group=order"),
		p.endpoint("jsonrpc", "/com.example.TxChecker"),
	}
	for _, v1 := range []bool{false, true} {
		gots = nil
		for _, raw := range eps {
			ep, err := checkback.ParseEndpoint(raw)
			require.NoError(t, err)
			a := c.do(t.Context(), call{ep: ep, bizID: "1001", key: "k-1", attempt: 1, timeout: 2 * time.Second, secret: []byte("s3cret"), signV1: v1})
			require.NoError(t, a.Err, raw)
		}
		require.Len(t, gots, 3)
		require.Equal(t, "1.0.0", gots[1].signed.TriVersion)
		require.Equal(t, "order", gots[1].signed.TriGroup)
		for i, g := range gots {
			ver, err := checkback.Verify(g.header, g.signed, checkback.VerifyOptions{Secrets: [][]byte{[]byte("s3cret")}, Now: now})
			require.NoError(t, err, eps[i])
			require.Equal(t, 2, ver.Version)
			if !v1 {
				require.NotContains(t, g.header, "v1=", eps[i])
				continue
			}
			i := strings.Index(g.header, ",v1=")
			require.Positive(t, i, g.header)
			t0, _, _ := strings.Cut(g.header, ",")
			ver, err = checkback.Verify(t0+g.header[i:], g.signed, checkback.VerifyOptions{Secrets: [][]byte{[]byte("s3cret")}, Now: now, AcceptV1: true})
			require.NoError(t, err)
			require.Equal(t, 1, ver.Version)
		}
	}
}
