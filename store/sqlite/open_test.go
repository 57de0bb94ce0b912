package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/sqlite"
)

// A database file in a directory that does not exist is reported as such,
// not as SQLite's "out of memory (14)"; nothing is created.
func TestOpenMissingDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nope")
	path := filepath.Join(dir, "ec.db")
	for _, opts := range []sqlite.Options{{Logger: quiet}, {Logger: quiet, CheckOnly: true}} {
		_, err := sqlite.Open(t.Context(), path, opts)
		require.ErrorContains(t, err, "directory "+dir+" does not exist")
		require.NotContains(t, err.Error(), "out of memory")
	}
	_, err := os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist)

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = sqlite.Open(t.Context(), filepath.Join(file, "ec.db"), sqlite.Options{Logger: quiet})
	require.ErrorContains(t, err, file+" is not a directory")
}

// CheckOnly opens a migrated database and refuses a missing or unmigrated
// one with store.ErrNotMigrated, without creating or migrating it.
func TestOpenCheckOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ec.db")
	_, err := sqlite.Open(t.Context(), path, sqlite.Options{Logger: quiet, CheckOnly: true})
	require.ErrorIs(t, err, store.ErrNotMigrated)
	require.ErrorContains(t, err, "does not exist")
	_, statErr := os.Stat(path)
	require.ErrorIs(t, statErr, os.ErrNotExist, "no file was created")

	// An empty database (made by something else) is not migrated either.
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	_, err = sqlite.Open(t.Context(), path, sqlite.Options{Logger: quiet, CheckOnly: true})
	require.ErrorIs(t, err, store.ErrNotMigrated)
	require.ErrorContains(t, err, "no eventcenter_schema_migrations table")

	s, err := sqlite.Open(t.Context(), path, sqlite.Options{Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s, err = sqlite.Open(t.Context(), path, sqlite.Options{Logger: quiet, CheckOnly: true})
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// The database file and its -wal and -shm files are the owner's only,
// whatever the umask: they hold message payloads.
func TestOpenCreatesPrivateFiles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ec.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{Logger: quiet})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), p)
	}
}
