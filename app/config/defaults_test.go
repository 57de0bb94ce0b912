package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/verifier"
)

// An empty configuration file and a zero component Config mean the same
// thing: the binary's defaults are the components' own (they used to
// disagree: first check-back 30s here, 10s in the verifier; endpoint
// concurrency 8 here, 4 there).
func TestDefaultIsTheComponentsZeroValue(t *testing.T) {
	t.Parallel()
	d := Default()
	require.Equal(t, (&verifier.Config{}).FirstDelay("any-biz"), d.Checkback.FirstDelay)
	require.NoError(t, verifier.Config{Workers: d.Checkback.Workers}.WithDefaults().Validate())
}
