package center

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/config"
)

// checkback.biz[].sign_v1 reaches the verifier (the transition switch for
// producers whose handler reads only v1 signatures); it is off by default.
func TestVerifierConfigCarriesSignV1(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, []string{"127.0.0.1:1"})
	cfg.Checkback.Biz = []config.Biz{{BizID: "old", Secret: "s", SignV1: true}, {BizID: "new", Secret: "s"}}
	v := verifierConfig(cfg, Options{Logger: quiet()})
	require.True(t, v.BizIDs["old"].SignV1)
	require.False(t, v.BizIDs["new"].SignV1)
}
