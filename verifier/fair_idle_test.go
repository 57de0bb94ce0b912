package verifier

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
)

// 300 one-off bizIDs, each with one check-back, are in BizStatus (and the
// verifier's per-bizID queues and states) until they have been idle for
// bizIdle; then they are dropped. A configured bizID stays.
func TestIdleBizIDsAreDropped(t *testing.T) {
	t.Parallel()
	good := clientlibProducer(t)
	clk := newClock()
	h := startVerifier(t, clk, openSQLite(t, clk), Config{
		Allow:  []string{good.endpoint("http", "/")},
		BizIDs: map[string]BizConfig{"configured": {Weight: 2}},
	})
	const n = 300
	for i := range n {
		h.prepare(fmt.Sprintf("once-%03d", i), "c-1", good.endpoint("http", "/cb"))
	}
	for i := range n {
		h.waitStatus(fmt.Sprintf("once-%03d", i), "c-1", state.Committed)
	}
	ids := func() []string {
		var out []string
		for _, s := range h.v.BizStatus() {
			out = append(out, s.BizID)
		}
		return out
	}
	require.Len(t, ids(), n+1, "every bizID checked back, and the configured one")
	clk.Advance(bizIdle + time.Minute)
	require.Eventually(t, func() bool { return slices.Equal(ids(), []string{"configured"}) }, 10*time.Second, 5*time.Millisecond,
		"idle bizIDs dropped: %v", len(ids()))
}
