package inboxtest

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/eventcenter/eventcenter/clientlib/inbox"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
)

func setup(t *testing.T, d inbox.Dialect, group string, opts ...inbox.Option) (*sql.DB, *inbox.Inbox) {
	t.Helper()
	db := DB(t, d)
	_, err := db.ExecContext(t.Context(), LedgerSchema(d))
	require.NoError(t, err)
	in, err := inbox.New(d, group, opts...)
	require.NoError(t, err)
	return db, in
}

func forEachDialect(t *testing.T, f func(t *testing.T, d inbox.Dialect)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			f(t, d)
		})
	}
}

func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d inbox.Dialect) {
		db := DB(t, d) // migrated once
		require.NoError(t, inbox.Migrate(t.Context(), db, d), "migrating again is harmless")
		var v int
		require.NoError(t, db.QueryRowContext(t.Context(), "SELECT MAX(version) FROM ec_inbox_schema_version").Scan(&v))
		require.Equal(t, 1, v)
	})
}

func TestRecordDuplicateAndRollback(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d inbox.Dialect) {
		ctx := t.Context()
		db, in := setup(t, d, "billing")

		// A transaction that aborts leaves no inbox row: the redelivery is new.
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		isNew, err := in.Record(ctx, tx, "order:1")
		require.NoError(t, err)
		require.True(t, isNew)
		require.NoError(t, tx.Rollback())

		applied, err := in.Do(ctx, db, "order:1", func(ctx context.Context, tx *sql.Tx) error { return Apply(ctx, tx, d, "order:1", 5) })
		require.NoError(t, err)
		require.True(t, applied)
		applied, err = in.Do(ctx, db, "order:1", func(ctx context.Context, tx *sql.Tx) error { return Apply(ctx, tx, d, "order:1", 5) })
		require.NoError(t, err)
		require.False(t, applied, "the redelivery is skipped")

		// An apply that fails rolls the inbox row back with it.
		boom := errors.New("boom")
		_, err = in.Do(ctx, db, "order:2", func(ctx context.Context, tx *sql.Tx) error {
			require.NoError(t, Apply(ctx, tx, d, "order:2", 7))
			return boom
		})
		require.ErrorIs(t, err, boom)
		applied, err = in.Do(ctx, db, "order:2", func(ctx context.Context, tx *sql.Tx) error { return Apply(ctx, tx, d, "order:2", 7) })
		require.NoError(t, err)
		require.True(t, applied)

		// Ids compare byte for byte (MySQL's default collation would not).
		applied, err = in.Do(ctx, db, "ORDER:1", func(ctx context.Context, tx *sql.Tx) error { return Apply(ctx, tx, d, "ORDER:1", 1) })
		require.NoError(t, err)
		require.True(t, applied, "ORDER:1 is not order:1")

		// Another consumer group applies the same message once too.
		other, err := inbox.New(d, "shipping")
		require.NoError(t, err)
		tx, err = db.BeginTx(ctx, nil)
		require.NoError(t, err)
		isNew, err = other.Record(ctx, tx, "order:1")
		require.NoError(t, err)
		require.True(t, isNew)
		require.NoError(t, tx.Commit())

		ids, apps, twice := Ledger(ctx, t, db)
		require.Equal(t, int64(3), ids)
		require.Equal(t, int64(3), apps)
		require.Empty(t, twice)
	})
}

// Two consumers that get the same message at once (a rebalance hands the
// partition over while the old owner still works on it): the second waits
// for the first's transaction and then sees a duplicate; if the first
// aborts instead, the second applies it.
func TestConcurrentSameID(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d inbox.Dialect) {
		for _, firstCommits := range []bool{true, false} {
			ctx := t.Context()
			db, in := setup(t, d, "g")
			tx1, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			isNew, err := in.Record(ctx, tx1, "m:1")
			require.NoError(t, err)
			require.True(t, isNew)

			type result struct {
				isNew bool
				err   error
			}
			second := make(chan result, 1)
			var wg sync.WaitGroup
			wg.Go(func() {
				tx2, err := db.BeginTx(ctx, nil)
				if err != nil {
					second <- result{err: err}
					return
				}
				defer func() { _ = tx2.Rollback() }()
				n, err := in.Record(ctx, tx2, "m:1")
				second <- result{n, err}
			})
			select {
			case r := <-second:
				t.Fatalf("the second Record returned while the first transaction was open: %+v", r)
			case <-time.After(200 * time.Millisecond): // it must still be waiting
			}
			if firstCommits {
				require.NoError(t, tx1.Commit())
			} else {
				require.NoError(t, tx1.Rollback())
			}
			r := <-second
			wg.Wait()
			require.NoError(t, r.err)
			require.Equal(t, !firstCommits, r.isNew)
		}
	})
}

func TestPurgeByAge(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d inbox.Dialect) {
		ctx := t.Context()
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		db, in := setup(t, d, "g", inbox.WithClock(clock))
		other, err := inbox.New(d, "other", inbox.WithClock(clock))
		require.NoError(t, err)
		record := func(b *inbox.Inbox, id string) {
			t.Helper()
			isNew, err := b.Record(ctx, db, id)
			require.NoError(t, err)
			require.True(t, isNew)
		}
		for _, id := range []string{"a:1", "a:2", "a:3", "a:4", "a:5"} {
			record(in, id)
		}
		record(other, "a:1")
		now = now.Add(48 * time.Hour)
		record(in, "a:6")

		n, err := in.Purge(ctx, db, 24*time.Hour, 2) // three batches: 2, 2, 1
		require.NoError(t, err)
		require.Equal(t, int64(5), n)
		isNew, err := in.Record(ctx, db, "a:1")
		require.NoError(t, err)
		require.True(t, isNew, "a purged id counts as new")
		isNew, err = in.Record(ctx, db, "a:6")
		require.NoError(t, err)
		require.False(t, isNew, "a young id is kept")
		isNew, err = other.Record(ctx, db, "a:1")
		require.NoError(t, err)
		require.False(t, isNew, "Purge deletes its own group's rows only")
	})
}

// A pgx transaction, through inbox.Pgx.
func TestPgxTransaction(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	require.NoError(t, inbox.Migrate(ctx, inbox.Pgx(pool), inbox.Postgres))
	in, err := inbox.New(inbox.Postgres, "g")
	require.NoError(t, err)
	run := func(commit bool) bool {
		t.Helper()
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		isNew, err := in.Record(ctx, inbox.Pgx(tx), "m:1")
		require.NoError(t, err)
		if commit {
			require.NoError(t, tx.Commit(ctx))
		} else {
			require.NoError(t, tx.Rollback(ctx))
		}
		return isNew
	}
	require.True(t, run(false))
	require.True(t, run(true), "the rolled back row is gone")
	require.False(t, run(true))
	n, err := in.Purge(ctx, inbox.Pgx(pool), time.Nanosecond, 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
}
