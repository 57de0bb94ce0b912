package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventcenter/eventcenter/internal/pgtest"
	"github.com/eventcenter/eventcenter/store/postgres"
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

// rawLifecycle does a lifecycle's writes without our code: insert 1,000
// rows via unnest, update their status by key via unnest, mark them sent by
// id via unnest; each statement its own transaction.
func rawLifecycle(pool *pgxpool.Pool) storetest.RawLifecycle {
	payload := make([]byte, storetest.BenchPayload)
	n := storetest.BatchSize
	return func(ctx context.Context, round int) error {
		bizs, keys, parts := make([]string, n), make([]string, n), make([]int32, n)
		payloads := make([][]byte, n)
		for i := range n {
			bizs[i], keys[i], parts[i] = "bench", storetest.BenchKey(round, i), int32(i%8)
			payloads[i] = payload
		}
		now := time.Now()
		rows, err := pool.Query(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
			payload, topic, forward_key, verify, verify_next_at, created_at, updated_at)
			SELECT b, k, p, 1, true, pl, 'orders', k, 'http://producer/check', $5, $6, $6
			FROM unnest($1::text[], $2::text[], $3::int[], $4::bytea[]) AS u(b, k, p, pl)
			ON CONFLICT (biz_id, message_key) DO NOTHING RETURNING id`,
			bizs, keys, parts, payloads, pgtype.Timestamptz{Time: now.Add(time.Minute), Valid: true}, now)
		if err != nil {
			return err
		}
		ids := make([]int64, 0, n)
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) != n {
			return fmt.Errorf("raw insert: %d rows", len(ids))
		}
		tag, err := pool.Exec(ctx, `UPDATE eventcenter_messages m SET status = 2, send_status = 0, decided_at = $3,
			send_next_at = $3, updated_at = $3
			FROM unnest($1::text[], $2::text[]) AS u(b, k) WHERE m.biz_id = u.b AND m.message_key = u.k`, bizs, keys, now)
		if err != nil || tag.RowsAffected() != int64(n) {
			return fmt.Errorf("raw update: %v, %v", err, tag)
		}
		tag, err = pool.Exec(ctx, `UPDATE eventcenter_messages m SET send_status = 1, sent_at = $2, updated_at = $2
			FROM unnest($1::bigint[]) AS u(id) WHERE m.id = u.id`, ids, now)
		if err != nil || tag.RowsAffected() != int64(n) {
			return fmt.Errorf("raw mark sent: %v, %v", err, tag)
		}
		return nil
	}
}
