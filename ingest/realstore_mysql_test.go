package ingest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/mysql"
	"github.com/eventcenter/eventcenter/store/mysql/mytest"
)

func TestWithMySQLStore(t *testing.T) {
	t.Parallel()
	db := mytest.DB(t)
	require.NoError(t, mysql.Migrate(t.Context(), db))
	st, err := mysql.New(db, mysql.Options{})
	require.NoError(t, err)
	exerciseRealStore(t, st)
}
