package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckbackFairnessSettings(t *testing.T) {
	t.Parallel()
	cfg := Default()
	require.NoError(t, Parse([]byte("checkback:\n  biz_workers: 10\n  biz:\n    - biz_id: a\n      weight: 3\n      rate: 2.5\n      burst: 5\n"+sqliteBase), &cfg))
	require.NoError(t, cfg.Validate())
	require.Equal(t, 10, cfg.Checkback.BizWorkers)
	b := cfg.Checkback.Biz[0]
	require.Equal(t, 3, b.Weight)
	require.InDelta(t, 2.5, b.Rate, 0)
	require.Equal(t, 5, b.Burst)

	for _, tc := range []struct{ body, want string }{
		{"checkback:\n  biz:\n    - biz_id: a\n      weight: -1\n", "checkback.biz[0].weight"},
		{"checkback:\n  biz:\n    - biz_id: a\n      rate: -2\n", "checkback.biz[0].rate"},
		{"checkback:\n  biz:\n    - biz_id: a\n      burst: 3\n", "checkback.biz[0].burst"},
		{"checkback:\n  biz:\n    - biz_id: a\n      rate: 1\n      burst: -1\n", "checkback.biz[0].burst"},
		{"checkback:\n  workers: 4\n  endpoint_concurrency: 4\n  biz_workers: 5\n", "checkback.biz_workers"},
	} {
		cfg := Default()
		err := Parse([]byte(tc.body+sqliteBase), &cfg)
		if err == nil {
			err = cfg.Validate()
		}
		requireUserError(t, err, tc.want)
	}
}

// checkback.biz[].sign_v1 reaches the verifier (the transition switch for
// producers whose handler reads only v1 signatures); it is off by default.
func TestVerifierConfigCarriesSignV1(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Checkback.Biz = []Biz{{BizID: "old", Secret: "s", SignV1: true}, {BizID: "new", Secret: "s"}}
	v := cfg.VerifierConfig()
	require.True(t, v.BizIDs["old"].SignV1)
	require.False(t, v.BizIDs["new"].SignV1)
}
