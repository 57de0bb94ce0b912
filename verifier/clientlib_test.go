package verifier

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/clientlib"
	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// clientlib's check-back handler reads the bizID however the verifier
// sends it (a number for a numeric bizID, else a string) and gives its
// function the bizID as the producer wrote it.
func TestClientlibHandlerReadsEveryBizIDEncoding(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]string{} // key -> bizID
	h := clientlib.NewCheckbackHandler(func(_ context.Context, bizID, key string) (clientlib.Decision, error) {
		mu.Lock()
		seen[key] = bizID
		mu.Unlock()
		return clientlib.DecisionCommit, nil
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	p := &producer{srv: srv}
	c := testCaller(t, time.Now)
	for _, ep := range []string{
		p.endpoint("tri", "/com.example.TxChecker/verifyMessage"),
		p.endpoint("tri", "/com.example.TxChecker/verifyMessage?bizid=string"),
		p.endpoint("jsonrpc", "/com.example.TxChecker"),
		p.endpoint("jsonrpc", "/com.example.TxChecker?bizid=string"),
		p.endpoint("http", "/checkback"),
	} {
		for _, bizID := range []string{"1001", "9223372036854775807", "007", "b-7"} {
			key := ep + "|" + bizID
			require.Equal(t, answer{Decision: checkback.DecisionCommit}, doCall(t, c, ep, bizID, key, nil), key)
			mu.Lock()
			require.Equal(t, bizID, seen[key], key)
			mu.Unlock()
		}
	}
}
