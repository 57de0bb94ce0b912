package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// rawLifecycle does a lifecycle's writes without our code, each step one
// transaction of multi-row statements (SQLite's analogue of unnest; at most
// 500 parameters each, as the driver binds in quadratic time): insert 1,000
// rows, update their status by key, mark them sent by id.
func rawLifecycle(db *sql.DB) storetest.RawLifecycle {
	payload := make([]byte, storetest.BenchPayload)
	n := storetest.BatchSize
	return func(ctx context.Context, round int) error {
		now := time.Now().UnixMicro()
		ids := make([]any, 0, n)
		err := inChunks(ctx, db, n, 8, func(tx *sql.Tx, lo, hi int) error {
			args := make([]any, 0, 8*(hi-lo))
			for i := lo; i < hi; i++ {
				k := storetest.BenchKey(round, i)
				args = append(args, "bench", k, i%8, payload, k, now+60e6, now, now)
			}
			rows, err := tx.QueryContext(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, payload,
				forward_key, verify_next_at, created_at, updated_at, status, has_body, topic, verify)
				SELECT column1, column2, column3, column4, column5, column6, column7, column8, 1, 1, 'orders',
				'http://producer/check' FROM (VALUES `+placeholders(hi-lo, 8)+`) RETURNING id`, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					return err
				}
				ids = append(ids, id)
			}
			return rows.Err()
		})
		if err != nil || len(ids) != n {
			return fmt.Errorf("raw insert: %v, %d rows", err, len(ids))
		}
		err = inChunks(ctx, db, n, 2, func(tx *sql.Tx, lo, hi int) error {
			args := make([]any, 0, 2*(hi-lo)+3)
			for i := lo; i < hi; i++ {
				args = append(args, "bench", storetest.BenchKey(round, i))
			}
			_, err := tx.ExecContext(ctx, `WITH u(b, k) AS (VALUES `+placeholders(hi-lo, 2)+`)
				UPDATE eventcenter_messages SET status = 2, send_status = 0, decided_at = ?, send_next_at = ?, updated_at = ?
				FROM u WHERE biz_id = u.b AND message_key = u.k`, append(args, now, now, now)...)
			return err
		})
		if err != nil {
			return fmt.Errorf("raw update: %w", err)
		}
		err = inChunks(ctx, db, n, 1, func(tx *sql.Tx, lo, hi int) error {
			_, err := tx.ExecContext(ctx, `WITH u(id) AS (VALUES `+placeholders(hi-lo, 1)+`)
				UPDATE eventcenter_messages SET send_status = 1, sent_at = ?, updated_at = ? FROM u
				WHERE eventcenter_messages.id = u.id`, append(slices.Clone(ids[lo:hi]), now, now)...)
			return err
		})
		if err != nil {
			return fmt.Errorf("raw mark sent: %w", err)
		}
		return nil
	}
}

func inChunks(ctx context.Context, db *sql.DB, n, cols int, fn func(tx *sql.Tx, lo, hi int) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	per := 500 / cols
	for lo := 0; lo < n; lo += per {
		if err := fn(tx, lo, min(lo+per, n)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func placeholders(n, cols int) string {
	row := "(" + strings.Repeat("?, ", cols-1) + "?)"
	return strings.Repeat(row+", ", n-1) + row
}
