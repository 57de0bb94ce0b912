package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/forwarder"
)

func TestForwardBizSettings(t *testing.T) {
	cfg, err := Load(write(t, "store:\n  driver: sqlite\n  dsn: /tmp/x.db\nforward:\n  biz:\n"+
		"    - {biz_id: flood, weight: 1, rate: 500, burst: 1000, max_in_flight: 2000}\n"+
		"    - {biz_id: vip, weight: 4}\n"))
	require.NoError(t, err)
	require.True(t, cfg.Forward.FairClaims, "fair claims by default")
	require.Equal(t, map[string]forwarder.BizLimits{
		"flood": {Weight: 1, Rate: 500, Burst: 1000, MaxInFlight: 2000},
		"vip":   {Weight: 4},
	}, cfg.Forward.BizLimits())
	require.Nil(t, Default().Forward.BizLimits(), "no limit by default")

	t.Setenv("EVENTCENTER_FORWARD_FAIR_CLAIMS", "false")
	cfg, err = Load(write(t, "store:\n  driver: sqlite\n  dsn: /tmp/x.db\n"))
	require.NoError(t, err)
	require.False(t, cfg.Forward.FairClaims)
}

func TestForwardBizValidation(t *testing.T) {
	for _, tc := range []struct{ entry, want string }{
		{"{weight: 2}", "forward.biz[0].biz_id"},
		{"{biz_id: a, weight: -1}", "forward.biz[0].weight"},
		{"{biz_id: a, rate: -5}", "forward.biz[0].rate"},
		{"{biz_id: a, burst: -1}", "forward.biz[0].burst"},
		{"{biz_id: a, max_in_flight: -1}", "forward.biz[0].max_in_flight"},
	} {
		_, err := Load(write(t, "store:\n  driver: sqlite\n  dsn: /tmp/x.db\nforward:\n  biz:\n    - "+tc.entry+"\n"))
		require.ErrorContains(t, err, tc.want, tc.entry)
	}
	_, err := Load(write(t, "store:\n  driver: sqlite\n  dsn: /tmp/x.db\nforward:\n  biz:\n    - {biz_id: a}\n    - {biz_id: a}\n"))
	require.ErrorContains(t, err, "forward.biz[1].biz_id: duplicate")
}
