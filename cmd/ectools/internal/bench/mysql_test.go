package bench

import (
	"database/sql"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/mysql/mytest"
)

// --store mysql runs the center and the raw baseline in fresh databases
// and drops them at the end.
func TestRunMySQL(t *testing.T) {
	t.Parallel()
	dsn := mytest.BaseDSN(t)
	cfg := Default()
	cfg.Store, cfg.DSN = "mysql", dsn
	cfg.Messages = 200
	cfg.Concurrency = 8
	cfg.CheckbackRatio = 0.2
	cfg.Partitions = 2
	rep, err := Run(t.Context(), cfg)
	require.NoError(t, err)
	require.Zero(t, rep.Center.Errors, rep.Center.FirstError)
	require.EqualValues(t, 200, rep.Center.Forwarded)
	require.Zero(t, rep.Center.Missing)
	require.NotEmpty(t, rep.Machine.MySQL)
	require.NotNil(t, rep.Store)
	require.Positive(t, rep.Ratio)

	mc, err := gomysql.ParseDSN(dsn)
	require.NoError(t, err)
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name LIKE ?",
		mc.DBName+"\\_bench\\_"+rep.RunID+"%").Scan(&n))
	require.Zero(t, n, "the run's databases are dropped")
}
