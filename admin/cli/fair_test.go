package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/admin"
	"github.com/eventcenter/eventcenter/admin/adminapi"
	"github.com/eventcenter/eventcenter/admin/internal/admintest"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/storetest"
)

func TestBizIDs(t *testing.T) {
	t.Parallel()
	env := admintest.New(t, nil, func(c *admin.Config) {
		c.Forwarding = func() []adminapi.BizForwarding {
			return []adminapi.BizForwarding{{BizID: "flood", Configured: true, Weight: 2, Rate: 50, Burst: 10,
				InFlight: 7, SendRate: 49.9, Throttled: []string{"rate"}}}
		}
		c.Checkbacks = func() map[string]adminapi.BizCheckback {
			return map[string]adminapi.BizCheckback{
				"flood": {CheckbackWeight: 1, CheckbackRate: 5, CheckbackBurst: 1, CheckbackWorkers: 3,
					CheckbackWaiting: 6, CheckbackRunning: 1, CheckbackThrottled: []string{"rate"}},
				"slowcb": {CheckbackWeight: 1, CheckbackWorkers: 3, CheckbackWaiting: 12, CheckbackRunning: 3,
					CheckbackThrottled: []string{"workers"}},
			}
		}
		c.Targets = func() []adminapi.TargetThrottle {
			since := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
			return []adminapi.TargetThrottle{
				{Target: "kafka-main", Paused: true, RemainingSeconds: 1.25, Cause: "broker_throttle", PauseSeconds: 2, Since: &since},
				{Target: "rocket"},
			}
		}
	})
	at := env.Clock.Now()
	_, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{
		storetest.Prepare("flood", "k1", 0, at), storetest.Commit("flood", "k1", 0, at)}})
	require.NoError(t, err)
	out, _, err := run(t, env, admintest.ReadToken, "bizids")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 7, out)
	require.Regexp(t, `^BIZID\s+WEIGHT\s+RATE\s+MAX IN FLIGHT\s+BACKLOG\s+DUE\s+OLDEST DUE\s+IN FLIGHT\s+SENT/S\s+THROTTLED\s+CHECK-BACK LIMITS\s+CB WAITING\s+CB RUNNING\s+CB THROTTLED$`, lines[0])
	require.Regexp(t, `^flood\s+2\s+50/s burst 10\s+-\s+1\s+1\s+\S+ \(0s ago\)\s+7\s+49.9\s+by rate\s+5/s burst 1, 3 workers\s+6\s+1\s+by rate$`, lines[1])
	require.Regexp(t, `^slowcb\s+1\s+-\s+-\s+0\s+0\s+-\s+0\s+0.0\s+no\s+no rate, 3 workers\s+12\s+3\s+by workers$`, lines[2])
	require.Empty(t, strings.TrimSpace(lines[3]))
	require.Regexp(t, `^TARGET\s+PAUSED\s+LEFT\s+LAST PAUSE\s+CAUSE\s+SINCE$`, lines[4])
	require.Regexp(t, `^kafka-main\s+yes\s+1.25s\s+2s\s+broker_throttle\s+2026-11-26T12:00:00Z$`, lines[5])
	require.Regexp(t, `^rocket\s+no\s+-\s+-\s+-\s+-$`, lines[6])

	out, _, err = run(t, env, admintest.ReadToken, "bizids", "-o", "json")
	require.NoError(t, err)
	var bs adminapi.BizShares
	require.NoError(t, json.Unmarshal([]byte(out), &bs))
	require.Equal(t, "flood", bs.BizIDs[0].BizID)
	require.Equal(t, int64(1), bs.BizIDs[0].Backlog)
	require.Equal(t, 6, bs.BizIDs[0].CheckbackWaiting)
	require.True(t, bs.Targets[0].Paused)
}
