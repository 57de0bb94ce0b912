package rawlifecycle_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store/mysql"
	"github.com/eventcenter/eventcenter/store/mysql/mytest"
	"github.com/eventcenter/eventcenter/store/rawlifecycle"
	"github.com/eventcenter/eventcenter/store/sqlite"
)

// The raw writes leave every message committed and sent, as the store's own
// lifecycle does, so the two are comparable.
func TestSQLiteLifecycleEndsSent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.db")
	st, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	require.NoError(t, err)
	defer st.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_txlock=immediate")
	require.NoError(t, err)
	defer db.Close()

	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprint("k-", i)
	}
	require.NoError(t, rawlifecycle.SQLite(db, []byte("payload"))(t.Context(), keys))
	for _, k := range []string{keys[0], keys[999]} {
		m, err := st.Get(t.Context(), "bench", k)
		require.NoError(t, err)
		require.Equal(t, state.Committed, m.Status)
		require.Equal(t, state.SendSent, m.SendStatus)
		require.Equal(t, []byte("payload"), m.Payload)
	}
	require.Error(t, rawlifecycle.SQLite(db, nil)(t.Context(), keys[:1]), "a key written twice is reported")
}

func TestMySQLLifecycleEndsSent(t *testing.T) {
	db := mytest.DB(t)
	require.NoError(t, mysql.Migrate(t.Context(), db))
	st, err := mysql.New(db, mysql.Options{})
	require.NoError(t, err)

	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprint("k-", i)
	}
	require.NoError(t, rawlifecycle.MySQL(db, []byte("payload"))(t.Context(), keys))
	for _, k := range []string{keys[0], keys[999]} {
		m, err := st.Get(t.Context(), "bench", k)
		require.NoError(t, err)
		require.Equal(t, state.Committed, m.Status)
		require.Equal(t, state.SendSent, m.SendStatus)
		require.Equal(t, []byte("payload"), m.Payload)
	}
	require.Error(t, rawlifecycle.MySQL(db, nil)(t.Context(), keys[:1]), "a key written twice is reported")
}
