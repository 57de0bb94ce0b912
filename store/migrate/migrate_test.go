package migrate

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	ms, err := Load(fstest.MapFS{
		"m/0002_more.sql": {Data: []byte("B")},
		"m/0001_init.sql": {Data: []byte("A")},
		"m/README":        {Data: []byte("x")},
	}, "m")
	require.NoError(t, err)
	require.Equal(t, []Migration{{Version: 1, Name: "init", SQL: "A"}, {Version: 2, Name: "more", SQL: "B"}}, ms)
	require.Equal(t, 2, Latest(ms))
	require.Equal(t, 0, Latest(nil))
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	for name, fsys := range map[string]fstest.MapFS{
		"bad name":         {"m/init.sql": {}},
		"zero":             {"m/0000_init.sql": {}},
		"gap":              {"m/0001_a.sql": {}, "m/0003_c.sql": {}},
		"dup":              {"m/0001_a.sql": {}, "m/1_b.sql": {}},
		"marker not first": {"m/0001_a.sql": {Data: []byte("-- a comment\n" + NoTransactionMarker + "\nCREATE INDEX x ON t (a);")}},
	} {
		_, err := Load(fsys, "m")
		require.Error(t, err, name)
	}
}

func TestNoTransactionMarker(t *testing.T) {
	t.Parallel()
	ms, err := Load(fstest.MapFS{
		"m/0001_tx.sql":   {Data: []byte("CREATE TABLE t (a int);")},
		"m/0002_notx.sql": {Data: []byte(NoTransactionMarker + "\r\n-- why\nCREATE INDEX CONCURRENTLY IF NOT EXISTS i ON t (a);\nCREATE INDEX CONCURRENTLY IF NOT EXISTS j\n  ON t (a, b);\n")},
	}, "m")
	require.NoError(t, err)
	require.False(t, ms[0].NoTransaction)
	require.True(t, ms[1].NoTransaction)
	require.Equal(t, []string{
		"CREATE INDEX CONCURRENTLY IF NOT EXISTS i ON t (a)",
		"CREATE INDEX CONCURRENTLY IF NOT EXISTS j\n  ON t (a, b)",
	}, ms[1].Statements())
}

func TestStatements(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"SELECT 1", "SELECT\n 2", "SELECT 3"},
		Statements("-- c\nSELECT 1;\n\nSELECT\n 2;  \n  -- c2\nSELECT 3"))
	require.Empty(t, Statements("-- only a comment\n"))
}
