package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/postgres/pgtest"
	"github.com/eventcenter/eventcenter/store/rawlifecycle"
	"github.com/eventcenter/eventcenter/store/storetest"
)

func benchPool(b *testing.B) *pgxpool.Pool {
	pool := pgtest.Pool(b)
	if err := postgres.Migrate(b.Context(), pool); err != nil {
		b.Fatal(err)
	}
	return pool
}

// BenchmarkLifecycle measures a message's store lifecycle in batches of
// 1,000 (store), and the same compared, round by round, with the writes done
// as raw SQL in another schema of the same database (vs-raw: msgs/s is
// ours, raw-msgs/s theirs, ratio ours/raw):
//
//	EVENTCENTER_TEST_POSTGRES=... go test -run '^$' -bench Lifecycle -benchtime 50x ./store/postgres/
func BenchmarkLifecycle(b *testing.B) {
	b.Run("store", func(b *testing.B) {
		s, err := postgres.New(benchPool(b), postgres.Options{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		storetest.BenchLifecycle(b, s)
	})
	b.Run("vs-raw", func(b *testing.B) {
		s, err := postgres.New(benchPool(b), postgres.Options{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		storetest.BenchCompare(b, s, rawLifecycle(benchPool(b)))
	})
}

// rawLifecycle does a lifecycle's writes without our code (see
// store/rawlifecycle).
func rawLifecycle(pool *pgxpool.Pool) storetest.RawLifecycle {
	write := rawlifecycle.Postgres(pool, make([]byte, storetest.BenchPayload))
	return func(ctx context.Context, round int) error {
		keys := make([]string, storetest.BatchSize)
		for i := range keys {
			keys[i] = storetest.BenchKey(round, i)
		}
		return write(ctx, keys)
	}
}
