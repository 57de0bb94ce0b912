package mysql_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/mysql"
	"github.com/eventcenter/eventcenter/store/mysql/mytest"
	"github.com/eventcenter/eventcenter/store/storetest"
)

// The ordered claim's NOT EXISTS reads the holders without locking them:
// a holder another transaction has locked (a sent mark in flight, say)
// counts as last committed (pending: it holds), and is never skipped the
// way SKIP LOCKED skips the claim's own rows.
func TestOrderedClaimSeesLockedHolders(t *testing.T) {
	t.Parallel()
	db := mytest.DB(t)
	require.NoError(t, mysql.Migrate(t.Context(), db))
	clock := storetest.NewClock()
	s, err := mysql.New(db, mysql.Options{Now: clock.Now, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	for _, k := range []string{"a", "b"} {
		_, err := s.Apply(t.Context(), store.ApplyRequest{Ordered: true, SendLease: time.Second, Changes: []store.Change{
			storetest.PrepareOrdered("biz", k, "o-1", 0, clock.Now()), storetest.Commit("biz", k, 0, clock.Now())}})
		require.NoError(t, err)
	}
	clock.Advance(time.Minute) // a's lease is over: both due, b held
	tx, err := db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	var id int64
	require.NoError(t, tx.QueryRowContext(t.Context(), `SELECT id FROM eventcenter_messages WHERE message_key = 'a' FOR UPDATE`).Scan(&id))

	got, err := s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{0}, Limit: 10, Lease: time.Minute, Ordered: true})
	require.NoError(t, err)
	require.Empty(t, got, "a is locked (skipped as a candidate) but still holds b back")
	require.NoError(t, tx.Rollback())
	got, err = s.ClaimSends(t.Context(), store.Claim{Partitions: []int32{0}, Limit: 10, Lease: time.Minute, Ordered: true})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "a", got[0].Key)
}
