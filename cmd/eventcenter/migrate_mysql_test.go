package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/internal/mytest"
	"github.com/eventcenter/eventcenter/store/mysql"
)

// eventcenter migrate creates the MySQL schema that serve checks for.
func TestMigrateMySQL(t *testing.T) {
	dsn := mytest.DSN(t)
	path := filepath.Join(t.TempDir(), "ec.yaml")
	require.NoError(t, os.WriteFile(path, []byte("store:\n  driver: mysql\n  dsn: "+dsn+"\n"), 0o600))
	out, err := run(t, "migrate", "--config", path)
	require.NoError(t, err, out)
	require.Contains(t, out, "migrated mysql store")
	db, err := mysql.OpenDB(dsn)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, mysql.CheckSchema(t.Context(), db))
}
