package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/mysql"
	"github.com/eventcenter/eventcenter/store/mysql/mytest"
)

// eventcenter migrate creates the MySQL schema that serve checks for.
func TestMigrateMySQL(t *testing.T) {
	dsn := mytest.DSN(t)
	path := filepath.Join(t.TempDir(), "ec.yaml")
	require.NoError(t, os.WriteFile(path, []byte("store:\n  driver: mysql\n  dsn: "+dsn+"\n"), 0o600))
	out, err := run(t, "migrate", "--plan", "--config", path)
	require.NoError(t, err, out)
	require.Contains(t, out, "mysql: schema version 0, this binary's is")
	require.Contains(t, out, "  0001 init (outside a transaction, statement by statement)\n    CREATE TABLE eventcenter_messages (\n      locks: none (a new table) [online]\n")
	out, err = run(t, "migrate", "--config", path)
	require.NoError(t, err, out)
	require.Contains(t, out, "migrated mysql store")
	out, err = run(t, "migrate", "--plan", "--config", path)
	require.NoError(t, err, out)
	require.Regexp(t, `mysql: schema version \d+, nothing to apply`, out)
	db, err := mysql.OpenDB(dsn)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, mysql.CheckSchema(t.Context(), db))
}
