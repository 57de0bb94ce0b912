package validate

import (
	"path/filepath"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/stretchr/testify/require"
)

// TestComposePublishesOnLoopbackOnly: the demo stack's admin token and
// Grafana password are well known, so no port is published on all
// interfaces (a machine running the demo must not hand its console and
// admin API to its network).
func TestComposePublishesOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	for _, files := range [][]string{{"compose.yaml"}, {"compose.yaml", "mysql.yaml"}} {
		paths := make([]string, len(files))
		for i, f := range files {
			paths[i] = filepath.Join(composeDir, f)
		}
		opts, err := cli.NewProjectOptions(paths,
			cli.WithWorkingDirectory(mustAbs(t, composeDir)),
			cli.WithEnv(nil),
			cli.WithResolvedPaths(true),
			cli.WithNormalization(true),
			cli.WithInterpolation(true),
			cli.WithProfiles([]string{"mysql"}),
		)
		require.NoError(t, err)
		p, err := cli.ProjectFromOptions(t.Context(), opts)
		require.NoError(t, err)
		n := 0
		for name, s := range p.Services {
			for _, port := range s.Ports {
				require.Equal(t, "127.0.0.1", port.HostIP, "%v: %s publishes port %s on all interfaces", files, name, port.Published)
				n++
			}
		}
		require.NotZero(t, n)
	}
}
