package center

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/app/config"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/mysql/mytest"
	"github.com/eventcenter/eventcenter/store/storetest"
)

// store.driver: mysql opens the MySQL store: it refuses an unmigrated
// database (saying what to run), migrates with auto_migrate or after
// "eventcenter migrate", and closes its own connections.
func TestOpenStoreMySQL(t *testing.T) {
	t.Parallel()
	cfg := config.Store{Driver: "mysql", DSN: mytest.DSN(t), MaxConns: 2}
	_, pool, err := OpenStore(t.Context(), cfg, time.Now, quiet())
	require.ErrorIs(t, err, store.ErrNotMigrated)
	require.ErrorContains(t, err, "eventcenter migrate")
	require.Nil(t, pool)

	require.NoError(t, Migrate(t.Context(), cfg, quiet()))
	st, pool, err := OpenStore(t.Context(), cfg, time.Now, quiet())
	require.NoError(t, err)
	require.Nil(t, pool, "the MySQL store owns its connections")
	_, err = st.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{storetest.Prepare("b", "k", 0, time.Now())}})
	require.NoError(t, err)
	m, err := st.Get(t.Context(), "b", "k")
	require.NoError(t, err)
	require.Equal(t, "orders", m.Topic)
	require.NoError(t, st.Close())
	_, err = st.Get(t.Context(), "b", "k")
	require.ErrorContains(t, err, "closed", "Close closed the pool")

	cfg.DSN = mytest.DSN(t)
	cfg.AutoMigrate = true
	st, _, err = OpenStore(t.Context(), cfg, time.Now, quiet())
	require.NoError(t, err)
	require.NoError(t, st.Close())
}

func TestNewFailsOnUnreachableMySQL(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, []string{"127.0.0.1:1"})
	cfg.Store = config.Store{Driver: "mysql", DSN: "nobody@tcp(127.0.0.1:1)/x?timeout=1s", MaxConns: 1}
	_, err := New(t.Context(), cfg, Options{Logger: quiet()})
	require.ErrorContains(t, err, "connect to mysql")
	require.Error(t, Migrate(t.Context(), cfg.Store, quiet()))
}
