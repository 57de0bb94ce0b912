package verifier

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// BenchmarkCaller is one check-back call per protocol shape (a GET, a
// POST with a body) to a producer answering commit; the producer runs in
// the same process, so ns/op counts both sides, allocs/op too.
func BenchmarkCaller(b *testing.B) {
	srv := httptest.NewServer(replying(checkback.DecisionCommit))
	defer srv.Close()
	tr := newTransport(4)
	defer tr.CloseIdleConnections()
	c := newCaller(tr, time.Now, slog.New(slog.DiscardHandler))
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct{ name, raw string }{
		{"http", "http://" + host + "/cb"},
		{"jsonrpc", "jsonrpc://" + host + "/rpc?method=verify"},
	} {
		ep, err := checkback.ParseEndpoint(tc.raw)
		if err != nil {
			b.Fatal(err)
		}
		cl := call{ep: ep, bizID: "shop", key: "order-1", attempt: 1, timeout: 5 * time.Second, secret: []byte("secret")}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if a := c.do(context.Background(), cl); a.Err != nil || a.Decision != checkback.DecisionCommit {
					b.Fatalf("answer %+v", a)
				}
			}
		})
	}
}
