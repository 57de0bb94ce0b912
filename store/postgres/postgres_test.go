package postgres_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/internal/pgtest"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/storetest"
)

var quiet = slog.New(slog.DiscardHandler)

func newStore(t *testing.T, now func() time.Time) store.Store {
	t.Helper()
	pool := pgtest.Pool(t)
	require.NoError(t, postgres.Migrate(t.Context(), pool))
	s, err := postgres.New(pool, postgres.Options{Now: now, Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, s.CheckSchema(t.Context()))
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, newStore)
}

func TestSchemaCheck(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	err := postgres.CheckSchema(t.Context(), pool)
	require.ErrorIs(t, err, store.ErrNotMigrated)
	require.NoError(t, postgres.Migrate(t.Context(), pool))
	require.NoError(t, postgres.Migrate(t.Context(), pool), "idempotent")
	require.NoError(t, postgres.CheckSchema(t.Context(), pool))
	_, err = pool.Exec(t.Context(), "DELETE FROM eventcenter_schema_migrations")
	require.NoError(t, err)
	require.ErrorIs(t, postgres.CheckSchema(t.Context(), pool), store.ErrNotMigrated)
}

func TestConcurrentMigrate(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- postgres.Migrate(t.Context(), pool) }()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
	require.NoError(t, postgres.CheckSchema(t.Context(), pool))
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := postgres.New(nil, postgres.Options{})
	require.Error(t, err)
	pool := pgtest.Pool(t)
	_, err = postgres.New(pool, postgres.Options{ApplyTries: -1})
	require.ErrorContains(t, err, "ApplyTries")
}
