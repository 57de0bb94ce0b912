package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/eventcenter/eventcenter/store/rawlifecycle"
	"github.com/eventcenter/eventcenter/store/sqlite"
	"github.com/eventcenter/eventcenter/store/storetest"
)

func benchStore(b *testing.B, path string) *sqlite.Store {
	s, err := sqlite.Open(b.Context(), path, sqlite.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkLifecycle measures a message's store lifecycle in batches of
// 1,000 (store), and the same compared, round by round, with the writes done
// as raw SQL on another database file with the same schema (vs-raw: msgs/s
// is ours, raw-msgs/s theirs, ratio ours/raw):
//
//	go test -run '^$' -bench Lifecycle -benchtime 50x ./store/sqlite/
func BenchmarkLifecycle(b *testing.B) {
	b.Run("store", func(b *testing.B) {
		storetest.BenchLifecycle(b, benchStore(b, filepath.Join(b.TempDir(), "ec.db")))
	})
	b.Run("vs-raw", func(b *testing.B) {
		dir := b.TempDir()
		s := benchStore(b, filepath.Join(dir, "ec.db"))
		rawPath := filepath.Join(dir, "raw.db")
		_ = benchStore(b, rawPath) // creates the schema
		db, err := sql.Open("sqlite", "file:"+rawPath+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
		if err != nil {
			b.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		b.Cleanup(func() { _ = db.Close() })
		storetest.BenchCompare(b, s, rawLifecycle(db))
	})
}

// rawLifecycle does a lifecycle's writes without our code (see
// store/rawlifecycle).
func rawLifecycle(db *sql.DB) storetest.RawLifecycle {
	write := rawlifecycle.SQLite(db, make([]byte, storetest.BenchPayload))
	return func(ctx context.Context, round int) error {
		return write(ctx, benchKeys(round))
	}
}

func benchKeys(round int) []string {
	keys := make([]string, storetest.BatchSize)
	for i := range keys {
		keys[i] = storetest.BenchKey(round, i)
	}
	return keys
}
