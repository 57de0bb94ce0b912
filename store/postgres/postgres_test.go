package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/state"
	"github.com/eventcenter/eventcenter/store"
	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
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

// Fair claims (docs/fairness.md).
func TestFair(t *testing.T) {
	t.Parallel()
	storetest.ExerciseFair(t, newStore)
}

// Per-key order: sequences, the claim rule, the fast path (docs/ordering.md).
func TestOrder(t *testing.T) {
	t.Parallel()
	storetest.ExerciseOrder(t, newStore)
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

// TestApplyInsertRace makes another transaction insert a key between
// Apply's SELECT and its INSERT: the insert returns fewer rows, Apply rolls
// back and tries again, and then sees the other row.
func TestApplyInsertRace(t *testing.T) {
	t.Parallel()
	for _, tries := range []int{5, 1} {
		t.Run(fmt.Sprintf("tries=%d", tries), func(t *testing.T) {
			t.Parallel()
			dsn := pgtest.DSN(t)
			raw := openPool(t, dsn)
			require.NoError(t, postgres.Migrate(t.Context(), raw))
			app := fmt.Sprintf("ec_race_%d_%d", tries, time.Now().UnixNano())
			s, err := postgres.New(openPool(t, dsn+"&application_name="+app), postgres.Options{Logger: quiet, ApplyTries: tries})
			require.NoError(t, err)
			clock := storetest.NewClock()

			// The other instance's transaction: a COMMIT of the key, not yet committed.
			other, err := raw.Begin(t.Context())
			require.NoError(t, err)
			defer other.Rollback(t.Context()) //nolint:errcheck // after commit: no-op
			_, err = other.Exec(t.Context(), `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status,
				created_at, updated_at, decided_at, send_next_at) VALUES ('b', 'k', 0, 2, $1, $1, $1, $1)`, clock.Now())
			require.NoError(t, err)

			type result struct {
				res store.ApplyResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := s.Apply(t.Context(), store.ApplyRequest{SendLease: time.Minute, Changes: []store.Change{
					storetest.Prepare("b", "k", 0, clock.Now()), storetest.Prepare("b", "other", 0, clock.Now()),
				}})
				done <- result{res, err}
			}()
			// Wait until Apply's INSERT blocks on the other transaction's key.
			require.Eventually(t, func() bool {
				var n int
				err := raw.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
					WHERE application_name = $1 AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO eventcenter_messages%'`, app).Scan(&n)
				return err == nil && n == 1
			}, 10*time.Second, 5*time.Millisecond)
			require.NoError(t, other.Commit(t.Context()))
			r := <-done
			if tries == 1 {
				require.Error(t, r.err)
				require.ErrorContains(t, r.err, "concurrent insert")
				_, err := s.Get(t.Context(), "b", "other")
				require.ErrorIs(t, err, store.ErrNotFound, "the failed try was rolled back")
				return
			}
			require.NoError(t, r.err)
			require.Equal(t, state.Outcome{Effect: state.Changed, Sendable: true}, r.res.Outcomes[0].Outcome,
				"the retry saw the committed row and filled in its body")
			require.Len(t, r.res.Sendable, 1)
			m, err := s.Get(t.Context(), "b", "k")
			require.NoError(t, err)
			require.Equal(t, state.Committed, m.Status)
			require.True(t, m.HasBody)
			_, err = s.Get(t.Context(), "b", "other")
			require.NoError(t, err)
		})
	}
}

func openPool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func TestErrorsAreWrapped(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	s, err := postgres.New(pool, postgres.Options{Logger: quiet}) // not migrated
	require.NoError(t, err)
	_, err = s.Get(t.Context(), "b", "k")
	require.ErrorContains(t, err, "get b:k")
	require.False(t, errors.Is(err, store.ErrNotFound))
	var pgErr *pgconn.PgError
	require.False(t, errors.As(err, &pgErr), "no pgx type escapes")
	var dbErr *postgres.Error
	require.ErrorAs(t, err, &dbErr)
	require.Equal(t, "42P01", dbErr.Code) // undefined_table
	_, err = s.Apply(t.Context(), store.ApplyRequest{Changes: []store.Change{storetest.Commit("b", "k", 0, time.Now())}})
	require.ErrorContains(t, err, "apply")
	require.ErrorContains(t, err, "eventcenter_messages")
	require.ErrorAs(t, err, &dbErr)
	require.False(t, errors.As(err, &pgErr))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = s.ClaimSends(ctx, store.Claim{Partitions: []int32{0}, Limit: 1, Lease: time.Second})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.As(err, &pgErr))
	_, err = s.List(t.Context(), store.Filter{Cursor: "bad"})
	require.ErrorContains(t, err, "cursor")
}

// Ordered messages written ahead, confirmed by sent watermarks (docs/ordering.md).
func TestWriteAhead(t *testing.T) {
	t.Parallel()
	storetest.ExerciseAhead(t, newStore)
}
