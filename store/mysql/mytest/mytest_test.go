package mytest

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDBIsolated(t *testing.T) {
	t.Parallel()
	a, b := DB(t), DB(t)
	var da, db string
	require.NoError(t, a.QueryRow("SELECT DATABASE()").Scan(&da))
	require.NoError(t, b.QueryRow("SELECT DATABASE()").Scan(&db))
	require.NotEqual(t, da, db)
	require.Regexp(t, `_t[0-9a-f]{16}$`, da)
	_, err := a.Exec("CREATE TABLE x (id int)")
	require.NoError(t, err)
	_, err = b.Exec("CREATE TABLE x (id int)")
	require.NoError(t, err, "same table name in another database")
}

func TestDatabaseDropped(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("inner", func(t *testing.T) {
		require.NoError(t, DB(t).QueryRow("SELECT DATABASE()").Scan(&name))
	})
	db, err := sql.Open("mysql", BaseDSN(t))
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?", name).Scan(&n))
	require.Zero(t, n)
}
