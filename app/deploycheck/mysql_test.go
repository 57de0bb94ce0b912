package deploycheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/config"
)

// The compose "mysql" profile's center configuration is the default one
// with the store on MySQL: nothing else may drift between the two.
func TestComposeMySQLConfigDiffersOnlyInTheStore(t *testing.T) {
	t.Parallel()
	load := func(path string) config.Config {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(repoRoot, path))
		require.NoError(t, err)
		cfg := config.Default()
		require.NoError(t, config.Parse(data, &cfg), path)
		return cfg
	}
	pg, my := load(ComposeConfig), load(ComposeMySQLConfig)
	require.Equal(t, "postgres", pg.Store.Driver)
	require.Equal(t, "mysql", my.Store.Driver)
	require.NoError(t, my.Validate())
	my.Store.Driver, my.Store.DSN = pg.Store.Driver, pg.Store.DSN
	require.Equal(t, pg, my)
}
