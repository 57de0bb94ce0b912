package cli

import (
	"encoding/json"
	"strings"
	"testing"

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
	})
	at := env.Clock.Now()
	_, err := env.Store.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{
		storetest.Prepare("flood", "k1", 0, at), storetest.Commit("flood", "k1", 0, at)}})
	require.NoError(t, err)
	out, _, err := run(t, env, admintest.ReadToken, "bizids")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Regexp(t, `^BIZID\s+WEIGHT\s+RATE\s+MAX IN FLIGHT\s+BACKLOG\s+DUE\s+OLDEST DUE\s+IN FLIGHT\s+SENT/S\s+THROTTLED$`, lines[0])
	require.Regexp(t, `^flood\s+2\s+50/s burst 10\s+-\s+1\s+1\s+\S+ \(0s ago\)\s+7\s+49.9\s+by rate$`, lines[1])

	out, _, err = run(t, env, admintest.ReadToken, "bizids", "-o", "json")
	require.NoError(t, err)
	var bs adminapi.BizShares
	require.NoError(t, json.Unmarshal([]byte(out), &bs))
	require.Equal(t, "flood", bs.BizIDs[0].BizID)
	require.Equal(t, int64(1), bs.BizIDs[0].Backlog)
}
