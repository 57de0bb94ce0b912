package validate

import (
	"path/filepath"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"
)

// The store on MySQL: compose.yaml plus the mysql.yaml override with the
// "mysql" profile mounts eventcenter-mysql.yaml in migrate and every center,
// and migrate waits for a healthy MySQL. Without the profile, no MySQL
// starts.
func TestComposeMySQLProfile(t *testing.T) {
	t.Parallel()
	p, err := loadCompose(t, filepath.Join(composeDir, "compose.yaml"))
	require.NoError(t, err)
	require.NotContains(t, p.Services, "mysql", "MySQL only with its profile")

	abs := mustAbs(t, composeDir)
	opts, err := cli.NewProjectOptions(
		[]string{filepath.Join(composeDir, "compose.yaml"), filepath.Join(composeDir, "mysql.yaml")},
		cli.WithWorkingDirectory(abs),
		cli.WithEnv(nil),
		cli.WithResolvedPaths(true),
		cli.WithConsistency(true),
		cli.WithNormalization(true),
		cli.WithInterpolation(true),
		cli.WithProfiles([]string{"mysql"}),
	)
	require.NoError(t, err)
	p, err = cli.ProjectFromOptions(t.Context(), opts)
	require.NoError(t, err)
	require.Contains(t, p.Services, "mysql")
	require.NotNil(t, p.Services["mysql"].HealthCheck)
	cfgFile := mustAbs(t, filepath.Join(composeDir, "eventcenter-mysql.yaml"))
	for _, name := range append([]string{"migrate"}, centers...) {
		s := p.Services[name]
		var mounts []string
		for _, v := range s.Volumes {
			if v.Target == "/etc/eventcenter/eventcenter.yaml" {
				mounts = append(mounts, v.Source)
				require.True(t, v.ReadOnly, name)
			}
		}
		require.Equal(t, []string{cfgFile}, mounts, "%s: mounts the MySQL configuration, once", name)
	}
	require.Equal(t, types.ServiceConditionHealthy, p.Services["migrate"].DependsOn["mysql"].Condition)
}
