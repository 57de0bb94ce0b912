package pgtest

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestPoolIsolated(t *testing.T) {
	t.Parallel()
	a, b := Pool(t), Pool(t)
	var sa, sb string
	require.NoError(t, a.QueryRow(t.Context(), "SELECT current_schema()").Scan(&sa))
	require.NoError(t, b.QueryRow(t.Context(), "SELECT current_schema()").Scan(&sb))
	require.NotEqual(t, sa, sb)
	require.Regexp(t, `^ec_test_[0-9a-f]{16}$`, sa)
	_, err := a.Exec(t.Context(), "CREATE TABLE x (id int)")
	require.NoError(t, err)
	_, err = b.Exec(t.Context(), "CREATE TABLE x (id int)")
	require.NoError(t, err, "same table name in another schema")
}

func TestDSN(t *testing.T) {
	t.Parallel()
	dsn := DSN(t)
	conn, err := pgx.Connect(t.Context(), dsn)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	var s string
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT current_schema()").Scan(&s))
	require.Regexp(t, `^ec_test_`, s)
}

func TestSchemaDropped(t *testing.T) {
	t.Parallel()
	var schema string
	t.Run("inner", func(t *testing.T) {
		require.NoError(t, Pool(t).QueryRow(t.Context(), "SELECT current_schema()").Scan(&schema))
	})
	conn, err := pgx.Connect(t.Context(), BaseDSN(t))
	require.NoError(t, err)
	defer conn.Close(t.Context())
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema).Scan(&n))
	require.Zero(t, n)
}

func TestWithSearchPath(t *testing.T) {
	t.Parallel()
	got, err := WithSearchPath("postgres://u@h:5432/db?sslmode=disable", "s1")
	require.NoError(t, err)
	require.Equal(t, "postgres://u@h:5432/db?options=-c%20search_path%3Ds1&sslmode=disable", got)
	got, err = WithSearchPath("postgres://h/db?options=-c%20work_mem%3D4MB", "s1")
	require.NoError(t, err)
	require.Contains(t, got, "options=-c%20work_mem%3D4MB%20-c%20search_path%3Ds1")
	got, err = WithSearchPath("host=h dbname=db", "s1")
	require.NoError(t, err)
	require.Equal(t, "host=h dbname=db options='-c search_path=s1'", got)
	_, err = WithSearchPath("host=h options='-c x=1'", "s1")
	require.Error(t, err)
	_, err = WithSearchPath("postgres://h:bad port/db", "s1")
	require.Error(t, err)
}
