package mysql_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/eventcenter/eventcenter/store/mysql"
	"github.com/eventcenter/eventcenter/store/mysql/mytest"
	"github.com/eventcenter/eventcenter/store/rawlifecycle"
	"github.com/eventcenter/eventcenter/store/storetest"
)

func benchDB(b *testing.B) *sql.DB {
	db := mytest.DB(b)
	if err := mysql.Migrate(b.Context(), db); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkLifecycle measures a message's store lifecycle in batches of
// 1,000 (store), and the same compared, round by round, with the writes done
// as raw SQL in another database of the same server (vs-raw: msgs/s is
// ours, raw-msgs/s theirs, ratio ours/raw):
//
//	EVENTCENTER_TEST_MYSQL=... go test -run '^$' -bench Lifecycle -benchtime 50x ./store/mysql/
func BenchmarkLifecycle(b *testing.B) {
	b.Run("store", func(b *testing.B) {
		s, err := mysql.New(benchDB(b), mysql.Options{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		storetest.BenchLifecycle(b, s)
	})
	b.Run("vs-raw", func(b *testing.B) {
		s, err := mysql.New(benchDB(b), mysql.Options{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		storetest.BenchCompare(b, s, rawLifecycle(benchDB(b)))
	})
}

// rawLifecycle does a lifecycle's writes without our code (see
// store/rawlifecycle).
func rawLifecycle(db *sql.DB) storetest.RawLifecycle {
	write := rawlifecycle.MySQL(db, make([]byte, storetest.BenchPayload))
	return func(ctx context.Context, round int) error {
		keys := make([]string, storetest.BatchSize)
		for i := range keys {
			keys[i] = storetest.BenchKey(round, i)
		}
		return write(ctx, keys)
	}
}
