package verifier

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/envelope/checkback"
)

// BizStatus shows a bizID held back by its check-back rate limit: its
// limit, the check-backs waiting in memory, and "rate" as the reason;
// a configured bizID with nothing claimed shows its settings and no
// hold.
func TestBizStatusShowsARateLimitedBizID(t *testing.T) {
	t.Parallel()
	p := newProducer(t, replying(checkback.DecisionCommit))
	clk := newRealClock()
	h := startVerifier(t, clk, newMemStore(clk.Now), Config{
		Allow:     []string{p.endpoint("http", "")},
		BusyDelay: 20 * time.Millisecond,
		Workers:   4, BizWorkers: 3,
		BizIDs: map[string]BizConfig{
			"limited": {Rate: 2, Burst: 1},
			"idle":    {Weight: 3},
		},
	})
	for i := range 20 {
		h.prepare("limited", fmt.Sprint("k", i), p.endpoint("http", "/cb"))
	}
	var got []BizStatus
	require.Eventually(t, func() bool {
		got = h.v.BizStatus()
		for _, s := range got {
			if s.BizID == "limited" && len(s.Throttled) == 1 && s.Waiting > 0 {
				return true
			}
		}
		return false
	}, 5*time.Second, time.Millisecond, "last %+v", got)
	require.Len(t, got, 2)
	idle, limited := got[0], got[1]
	require.Equal(t, BizStatus{BizID: "idle", Configured: true, Weight: 3, Workers: 3, Throttled: []string{}}, idle)
	require.Equal(t, "limited", limited.BizID)
	require.True(t, limited.Configured)
	require.Equal(t, 2.0, limited.Rate)
	require.Equal(t, 1, limited.Burst)
	require.Equal(t, []string{limitRate}, limited.Throttled)
	require.LessOrEqual(t, limited.Waiting, 3, "beyond what the rate lets through in a second, put off")
}
