package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The forwarder's and the verifier's limits are theirs (their Validate);
// the settings that reach them are refused, under their YAML names, when
// set to 0 or below, although a zero field means the default to the
// component: the settings start from the component's defaults.
func TestComponentLimitsUnderTheSettingsNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, want string }{
		{"forward:\n  max_attempts: 0\n", "forward.max_attempts: must be positive, got 0"},
		{"forward:\n  max_attempts: -3\n", "forward.max_attempts: must be positive, got -3"},
		{"forward:\n  scan_interval: 0s\n", "forward.scan_interval: must be positive, got 0s"},
		{"forward:\n  lease: 0s\n", "forward.lease: must be at least 1s, got 0s"},
		{"forward:\n  lease: 500ms\n  send_timeout: 100ms\n  inline_timeout: -1s\n", "forward.lease: must be at least 1s, got 500ms"},
		{"forward:\n  send_timeout: 0s\n", "forward.send_timeout: must be positive and shorter than forward.lease (30s), got 0s"},
		{"forward:\n  send_timeout: 30s\n", "forward.send_timeout: must be shorter than forward.lease (30s)"},
		{"forward:\n  inline_timeout: 0s\n", "forward.inline_timeout: must be shorter than forward.lease (30s), and not 0"},
		{"forward:\n  backoff_base: 0s\n", "forward.backoff_base: must be positive, got 0s"},
		{"forward:\n  backoff_base: 10m\n", "forward.backoff_cap: must not be below forward.backoff_base (10m0s), got 5m0s"},
		{"checkback:\n  workers: 0\n  endpoint_concurrency: 0\n", "checkback.workers: must be at least 1, got 0"},
		{"checkback:\n  endpoint_concurrency: 0\n", "checkback.endpoint_concurrency: must be at least 1, got 0"},
		{"checkback:\n  workers: 4\n", "checkback.endpoint_concurrency: must not exceed checkback.workers (4), got 8"},
		{"checkback:\n  biz_workers: -1\n", "checkback.biz_workers: must be 0 (3/4 of checkback.workers) to checkback.workers (64), got -1"},
		{"checkback:\n  lease: 0s\n", "checkback.lease: must be at least 3 × checkback.timeout (9s), got 0s"},
		{"checkback:\n  lease: 5s\n", "checkback.lease: must be at least 3 × checkback.timeout (9s), got 5s"},
		{"checkback:\n  timeout: 0s\n", "checkback.timeout: must be positive, got 0s"},
		{"checkback:\n  max_attempts: 0\n", "checkback.max_attempts: must be at least 1, got 0"},
		{"checkback:\n  breaker:\n    failures: 0\n    cooldown: 1s\n", "checkback.breaker.failures: must be at least 1, got 0"},
		{"checkback:\n  biz:\n    - biz_id: a\n      timeout: 1m\n", "checkback.lease: must be at least 3 × checkback.biz[0].timeout (3m0s), got 2m0s"},
		{"checkback:\n  biz:\n    - biz_id: a\n      force_endpoint: true\n", "checkback.biz[0].force_endpoint: is set without checkback.biz[0].endpoint"},
		{"checkback:\n  biz:\n    - biz_id: a\n    - biz_id: 'b:c'\n", "checkback.biz[1].biz_id: a bizID is non-empty and has no ':'"},
		{"checkback:\n  biz:\n    - biz_id: a\n    - biz_id: a\n", `checkback.biz[1].biz_id: duplicate bizID "a"`},
		{"checkback:\n  allow: ['ftp://h']\n", `checkback.allow[0]: "ftp://h"`},
		{"forward:\n  biz:\n    - {biz_id: a}\n    - {biz_id: b, weight: -1}\n", "forward.biz[1].weight: must not be negative (0 means 1), got -1"},
		{"forward:\n  biz:\n    - {biz_id: ''}\n", "forward.biz[0].biz_id: a bizID is required"},
		{"forward:\n  biz:\n    - {biz_id: a}\n    - {biz_id: a}\n", `forward.biz[1].biz_id: duplicate bizID "a"`},
	} {
		cfg := Default()
		require.NoError(t, Parse([]byte(tc.body+sqliteBase), &cfg), tc.body)
		err := cfg.Validate()
		requireUserError(t, err, tc.want)
		n := 0
		for _, l := range strings.Split(err.Error(), "\n") {
			if strings.HasPrefix(l, tc.want) {
				n++
			}
		}
		require.Equal(t, 1, n, "%q once in:\n%s", tc.want, err)
	}
	// What the components derive from what is set is left to them.
	cfg := Default()
	require.NoError(t, Parse([]byte("checkback:\n  workers: 8\n  biz_workers: 0\nforward:\n  scan_interval: 20ms\n  lease: 2s\n  send_timeout: 1s\n  inline_timeout: 500ms\n"+sqliteBase), &cfg))
	require.NoError(t, cfg.Validate())
	require.Zero(t, cfg.VerifierConfig().BizWorkers, "3/4 of the workers, derived by the verifier")
	fc := cfg.ForwarderConfig()
	require.Zero(t, fc.HandoffWait, "derived from forward.lease by the forwarder")
	require.Zero(t, fc.BusyScanInterval, "derived from forward.scan_interval by the forwarder")
}
