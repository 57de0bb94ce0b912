package sharded_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/store/sharded"
	"github.com/eventcenter/eventcenter/store/storetest"
)

var quiet = slog.New(slog.DiscardHandler)

// pgShard opens a migrated PostgreSQL store on a fresh schema of server.
func pgShard(t *testing.T, server *pgtest.Server, now func() time.Time) *postgres.Store {
	t.Helper()
	pool := pgtest.PoolOn(t, server.DSN())
	require.NoError(t, postgres.Migrate(t.Context(), pool))
	s, err := postgres.New(pool, postgres.Options{Now: now, Logger: quiet})
	require.NoError(t, err)
	return s
}

// pgSharded returns a sharded store with one shard on each server, the
// buckets split evenly.
func pgSharded(t *testing.T, now func() time.Time, servers ...*pgtest.Server) *sharded.Store {
	t.Helper()
	var shards []sharded.Shard
	for i, b := range sharded.Even(len(servers)) {
		shards = append(shards, sharded.Shard{Store: pgShard(t, servers[i], now), Buckets: b})
	}
	s, err := sharded.New(shards)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// The sharded store over two PostgreSQL clusters started here (initdb)
// passes the conformance suite, and so does each shard on its own.
func TestConformancePostgresClusters(t *testing.T) {
	t.Parallel()
	a, b := pgtest.Cluster(t), pgtest.Cluster(t)
	t.Run("sharded", func(t *testing.T) {
		t.Parallel()
		storetest.Exercise(t, func(t *testing.T, now func() time.Time) store.Store { return pgSharded(t, now, a, b) })
	})
	for i, srv := range []*pgtest.Server{a, b} {
		t.Run("shard"+string(rune('0'+i)), func(t *testing.T) {
			t.Parallel()
			storetest.Exercise(t, func(t *testing.T, now func() time.Time) store.Store {
				s := pgShard(t, srv, now)
				t.Cleanup(func() { require.NoError(t, s.Close()) })
				return s
			})
		})
	}
}
