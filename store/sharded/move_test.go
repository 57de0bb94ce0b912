package sharded_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/store/sharded"
	"github.com/eventcenter/eventcenter/store/storetest"
)

// migratedPool is a pool on a fresh, migrated schema of server.
func migratedPool(t *testing.T, server *pgtest.Server) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.PoolOn(t, server.DSN())
	require.NoError(t, postgres.Migrate(t.Context(), pool))
	return pool
}

// over opens a sharded store over two pools with the given bucket lists
// (the pools stay open).
func over(t *testing.T, now func() time.Time, pools [2]*pgxpool.Pool, buckets [2]string) *sharded.Store {
	t.Helper()
	var shards []sharded.Shard
	for i, p := range pools {
		st, err := postgres.New(p, postgres.Options{Now: now, Logger: quiet})
		require.NoError(t, err)
		shards = append(shards, sharded.Shard{Store: st, Buckets: buckets[i]})
	}
	s, err := sharded.New(shards)
	require.NoError(t, err)
	return s
}

func rows(t *testing.T, pool *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

// Moving half the buckets from a full shard to a new, empty one (center
// stopped): every message arrives with its state, leases and audit
// records; the source keeps only its buckets; pending messages are then
// sent once through the new map; a second run moves nothing; a target
// without the schema fails before the source loses anything.
func TestMoveBuckets(t *testing.T) {
	t.Parallel()
	a, b := pgtest.Cluster(t), pgtest.Cluster(t)
	clock := storetest.NewClock()
	pools := [2]*pgxpool.Pool{migratedPool(t, a), migratedPool(t, b)}

	before := over(t, clock.Now, pools, [2]string{"0-1023", ""})
	keys := storetest.Keys("mv", 300)
	var changes []store.Change
	for i, k := range keys {
		changes = append(changes, storetest.Prepare("shop", k, int32(i%4), clock.Now()))
		switch i % 3 {
		case 0:
			changes = append(changes, storetest.Commit("shop", k, int32(i%4), clock.Now()))
		case 1:
			changes = append(changes, storetest.Rollback("shop", k, int32(i%4), clock.Now()))
		}
	}
	res, err := before.Apply(t.Context(), store.ApplyRequest{Changes: changes, SendLease: time.Minute})
	require.NoError(t, err)
	require.Len(t, res.Sendable, 100)
	// Half of the committed ones are sent; one prepared gets an operator action.
	var sent []store.Sent
	for _, m := range res.Sendable[:50] {
		sent = append(sent, store.Sent{ID: m.ID, Ref: "ref-" + m.Key})
	}
	require.NoError(t, before.MarkSent(t.Context(), sent))
	_, err = before.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{
		storetest.Operator("shop", keys[2], state.KindResolveRollback, clock.Now(), "alice")}})
	require.NoError(t, err)
	want := map[string]state.Message{}
	for _, k := range keys {
		m, err := before.Get(t.Context(), "shop", k)
		require.NoError(t, err)
		want[k] = m
	}
	wantCounts, err := before.Counts(t.Context())
	require.NoError(t, err)
	require.Equal(t, 300, rows(t, pools[0], "eventcenter_messages"))

	// A target without the schema: nothing leaves the source.
	empty := pgtest.PoolOn(t, b.DSN())
	_, err = sharded.MoveBuckets(t.Context(), pools[0], empty, mustBuckets(t, "512-1023"))
	require.ErrorContains(t, err, "move buckets: target")
	require.Equal(t, 300, rows(t, pools[0], "eventcenter_messages"))
	_, err = sharded.MoveBuckets(t.Context(), pools[0], pools[1], []int{1024})
	require.ErrorContains(t, err, "outside 0-1023")

	moved, err := sharded.MoveBuckets(t.Context(), pools[0], pools[1], mustBuckets(t, "512-1023"))
	require.NoError(t, err)
	require.Positive(t, moved.Messages)
	require.Equal(t, 300, rows(t, pools[0], "eventcenter_messages")+rows(t, pools[1], "eventcenter_messages"))
	require.Equal(t, moved.Messages, rows(t, pools[1], "eventcenter_messages"))
	again, err := sharded.MoveBuckets(t.Context(), pools[0], pools[1], mustBuckets(t, "512-1023"))
	require.NoError(t, err)
	require.Zero(t, again.Messages, "a second run moves nothing")

	after := over(t, clock.Now, pools, [2]string{"0-511", "512-1023"})
	for _, k := range keys {
		m, err := after.Get(t.Context(), "shop", k)
		require.NoError(t, err, k)
		w := want[k]
		w.ID = m.ID // the target assigns its own IDs
		require.Equal(t, w, m, k)
	}
	gotCounts, err := after.Counts(t.Context())
	require.NoError(t, err)
	require.Equal(t, wantCounts, gotCounts)
	audit, err := after.Audit(t.Context(), "shop", keys[2])
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Equal(t, "alice", audit[0].Who)

	// The 50 unsent messages come back after their lease and are sent
	// once each through the new map.
	clock.Advance(2 * time.Minute)
	claimed, err := after.ClaimSends(t.Context(), store.Claim{Partitions: []int32{0, 1, 2, 3}, Limit: 1000, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 50)
	sent = sent[:0]
	for _, m := range claimed {
		require.Empty(t, want[m.Key].SendRef, "%s was sent before the move", m.Key)
		sent = append(sent, store.Sent{ID: m.ID, Ref: "ref2-" + m.Key})
	}
	require.NoError(t, after.MarkSent(t.Context(), sent))
	claimed, err = after.ClaimSends(t.Context(), store.Claim{Partitions: []int32{0, 1, 2, 3}, Limit: 1000, Lease: time.Minute})
	require.NoError(t, err)
	require.Empty(t, claimed)
}

func mustBuckets(t *testing.T, s string) []int {
	t.Helper()
	bs, err := sharded.ParseBuckets(s)
	require.NoError(t, err)
	return bs
}
