package forwarder_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store/mysql"
	"github.com/eventcenter/eventcenter/store/mysql/mytest"
)

// TestRebalanceHandsMessagesOverMySQL is TestRebalanceHandsMessagesOver on
// the MySQL store.
func TestRebalanceHandsMessagesOverMySQL(t *testing.T) {
	t.Parallel()
	clk := newClock()
	db := mytest.DB(t)
	require.NoError(t, mysql.Migrate(t.Context(), db))
	st, err := mysql.New(db, mysql.Options{Now: clk.Now, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	rebalance(t, clk, st)
}
