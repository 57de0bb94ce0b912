package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventcenter/eventcenter/store/postgres"
	"github.com/eventcenter/eventcenter/store/sqlite"
)

// Throughput is a baseline's result.
type Throughput struct {
	Messages  int     `json:"messages"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_second"`
	Writers   int     `json:"writers,omitempty"`
	What      string  `json:"what"`
}

func throughput(n int, d time.Duration, what string) *Throughput {
	return &Throughput{Messages: n, Seconds: d.Seconds(), PerSecond: float64(n) / d.Seconds(), What: what}
}

// transportBaseline produces n records of the run's payload to a fresh
// topic on the same broker and consumes them, no center: records/s from
// the first produce to the last record consumed.
func transportBaseline(ctx context.Context, brokers []string, topic string, partitions, n, payloadSize int) (*Throughput, error) {
	if err := createTopics(ctx, brokers, partitions, time.Hour, topic); err != nil {
		return nil, err
	}
	defer deleteTopics(context.WithoutCancel(ctx), brokers, topic)
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(100000))
	if err != nil {
		return nil, fmt.Errorf("transport baseline: producer: %w", err)
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("transport baseline: consumer: %w", err)
	}
	defer cons.Close()

	payload := make([]byte, payloadSize)
	var failed atomic.Value
	start := time.Now()
	go func() {
		for i := range n {
			key := strconv.AppendInt([]byte("bench:k-"), int64(i), 10)
			prod.Produce(ctx, &kgo.Record{Key: key, Value: payload}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, err)
				}
			})
		}
	}()
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err, _ := failed.Load().(error); err != nil {
			return nil, fmt.Errorf("transport baseline: produce: %w", err)
		}
		fs.EachError(func(_ string, _ int32, err error) {
			failed.CompareAndSwap(nil, err)
		})
		got += fs.NumRecords()
	}
	return throughput(n, time.Since(start), "produce + consume, same broker, no center"), nil
}

// storeBaseline writes n messages' lifecycle (insert prepared, update
// committed, update sent) in batches of batchSize straight to the database,
// no center, with writers concurrent writers.
func storeBaseline(ctx context.Context, cfg Config, runID string, n, writers int) (_ *Throughput, err error) {
	var lifecycle func(ctx context.Context, round int) error
	var what string
	switch cfg.Store {
	case "postgres":
		dsn, drop, err := freshSchema(ctx, cfg.DSN, "ecbench_"+runID+"_raw")
		if err != nil {
			return nil, fmt.Errorf("store baseline: %w", err)
		}
		defer drop()
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			return nil, fmt.Errorf("store baseline: connect: %w", err)
		}
		defer pool.Close()
		if err := postgres.Migrate(ctx, pool); err != nil {
			return nil, fmt.Errorf("store baseline: migrate: %w", err)
		}
		lifecycle = pgLifecycle(pool, runID, cfg.Payload)
		what = "insert + update + update via unnest, 1,000 per statement and transaction"
	case "sqlite":
		path := filepath.Join(cfg.tempDir, "baseline.db")
		st, err := sqlite.Open(ctx, path, sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return nil, fmt.Errorf("store baseline: create schema: %w", err)
		}
		_ = st.Close()
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
		if err != nil {
			return nil, fmt.Errorf("store baseline: open: %w", err)
		}
		defer db.Close()
		lifecycle = sqliteLifecycle(db, runID, cfg.Payload)
		what = "insert + update + update as multi-row statements, 1,000 per transaction"
	}
	rounds := (n + batchSize - 1) / batchSize
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	start := time.Now()
	for range writers {
		wg.Go(func() {
			for {
				r := int(next.Add(1) - 1)
				if r >= rounds || ctx.Err() != nil {
					return
				}
				if err := lifecycle(ctx, r); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("store baseline: %w", err)
	}
	t := throughput(rounds*batchSize, time.Since(start), what)
	t.Writers = writers
	return t, nil
}

const batchSize = 1000

func baselineKey(runID string, round, i int) string {
	return fmt.Sprintf("raw-%s-%08d-%05d", runID, round, i)
}

func pgLifecycle(pool *pgxpool.Pool, runID string, payloadSize int) func(context.Context, int) error {
	payload := make([]byte, payloadSize)
	return func(ctx context.Context, round int) error {
		n := batchSize
		bizs, keys, parts := make([]string, n), make([]string, n), make([]int32, n)
		payloads := make([][]byte, n)
		for i := range n {
			bizs[i], keys[i], parts[i], payloads[i] = "bench", baselineKey(runID, round, i), int32(i%8), payload
		}
		now := time.Now()
		rows, err := pool.Query(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
			payload, topic, forward_key, verify, verify_next_at, created_at, updated_at)
			SELECT b, k, p, 1, true, pl, 'bench', k, 'http://producer/check', $5, $6, $6
			FROM unnest($1::text[], $2::text[], $3::int[], $4::bytea[]) AS u(b, k, p, pl)
			ON CONFLICT (biz_id, message_key) DO NOTHING RETURNING id`,
			bizs, keys, parts, payloads, pgtype.Timestamptz{Time: now.Add(time.Minute), Valid: true}, now)
		if err != nil {
			return fmt.Errorf("insert: %w", err)
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
			return fmt.Errorf("insert: %w", err)
		}
		if len(ids) != n {
			return fmt.Errorf("insert: %d rows, want %d", len(ids), n)
		}
		tag, err := pool.Exec(ctx, `UPDATE eventcenter_messages m SET status = 2, send_status = 0, decided_at = $3,
			send_next_at = $3, updated_at = $3
			FROM unnest($1::text[], $2::text[]) AS u(b, k) WHERE m.biz_id = u.b AND m.message_key = u.k`, bizs, keys, now)
		if err != nil || tag.RowsAffected() != int64(n) {
			return fmt.Errorf("update committed: %v, %v", err, tag)
		}
		tag, err = pool.Exec(ctx, `UPDATE eventcenter_messages m SET send_status = 1, sent_at = $2, updated_at = $2
			FROM unnest($1::bigint[]) AS u(id) WHERE m.id = u.id`, ids, now)
		if err != nil || tag.RowsAffected() != int64(n) {
			return fmt.Errorf("update sent: %v, %v", err, tag)
		}
		return nil
	}
}

// sqliteLifecycle does the same writes in multi-row statements of at most
// 500 parameters (the driver binds in quadratic time), each step one
// transaction.
func sqliteLifecycle(db *sql.DB, runID string, payloadSize int) func(context.Context, int) error {
	payload := make([]byte, payloadSize)
	return func(ctx context.Context, round int) error {
		n := batchSize
		now := time.Now().UnixMicro()
		ids := make([]any, 0, n)
		err := inChunks(ctx, db, n, 8, func(tx *sql.Tx, lo, hi int) error {
			args := make([]any, 0, 8*(hi-lo))
			for i := lo; i < hi; i++ {
				k := baselineKey(runID, round, i)
				args = append(args, "bench", k, i%8, payload, k, now+60e6, now, now)
			}
			rows, err := tx.QueryContext(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, payload,
				forward_key, verify_next_at, created_at, updated_at, status, has_body, topic, verify)
				SELECT column1, column2, column3, column4, column5, column6, column7, column8, 1, 1, 'bench',
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
			return fmt.Errorf("insert: %v, %d rows", err, len(ids))
		}
		err = inChunks(ctx, db, n, 2, func(tx *sql.Tx, lo, hi int) error {
			args := make([]any, 0, 2*(hi-lo)+3)
			for i := lo; i < hi; i++ {
				args = append(args, "bench", baselineKey(runID, round, i))
			}
			_, err := tx.ExecContext(ctx, `WITH u(b, k) AS (VALUES `+placeholders(hi-lo, 2)+`)
				UPDATE eventcenter_messages SET status = 2, send_status = 0, decided_at = ?, send_next_at = ?, updated_at = ?
				FROM u WHERE biz_id = u.b AND message_key = u.k`, append(args, now, now, now)...)
			return err
		})
		if err != nil {
			return fmt.Errorf("update committed: %w", err)
		}
		err = inChunks(ctx, db, n, 1, func(tx *sql.Tx, lo, hi int) error {
			args := append(append([]any(nil), ids[lo:hi]...), now, now)
			_, err := tx.ExecContext(ctx, `WITH u(id) AS (VALUES `+placeholders(hi-lo, 1)+`)
				UPDATE eventcenter_messages SET send_status = 1, sent_at = ?, updated_at = ? FROM u
				WHERE eventcenter_messages.id = u.id`, args...)
			return err
		})
		if err != nil {
			return fmt.Errorf("update sent: %w", err)
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
