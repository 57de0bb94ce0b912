package center

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/store"
)

// store.driver: sqlite behaves as PostgreSQL and MySQL do: without
// auto_migrate it refuses an unmigrated database, saying what to run, and
// opens it after "eventcenter migrate".
func TestOpenStoreSQLiteWithoutAutoMigrate(t *testing.T) {
	t.Parallel()
	cfg := config.Store{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "ec.db"), MaxConns: 1}
	_, _, err := OpenStore(t.Context(), cfg, time.Now, quiet())
	require.ErrorIs(t, err, store.ErrNotMigrated)
	require.ErrorContains(t, err, `run "eventcenter migrate" or set store.auto_migrate`)

	require.NoError(t, Migrate(t.Context(), cfg, quiet()))
	st, _, err := OpenStore(t.Context(), cfg, time.Now, quiet())
	require.NoError(t, err)
	require.NoError(t, st.Close())
}

// A SQLite file in a missing directory names the directory.
func TestOpenStoreSQLiteMissingDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "missing")
	cfg := config.Store{Driver: "sqlite", DSN: filepath.Join(dir, "ec.db"), MaxConns: 1, AutoMigrate: true}
	_, _, err := OpenStore(t.Context(), cfg, time.Now, quiet())
	require.ErrorContains(t, err, "directory "+dir+" does not exist")
	err = Migrate(t.Context(), cfg, quiet())
	require.ErrorContains(t, err, "directory "+dir+" does not exist")
}
