// Package rawlifecycle writes a message's store lifecycle (insert PREPARED,
// update COMMITTED by key, update SENT by id) as plain batched SQL, without
// the store's code: the baseline that the stores' Go benchmarks and the load
// tool (ectools bench) compare the center against. One implementation
// serves both, so the two baselines cannot drift apart.
package rawlifecycle

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Writer writes the whole lifecycle of one batch of messages (bizID "bench",
// the given keys) with payload as body.
type Writer func(ctx context.Context, keys []string) error

// Postgres writes each step as one unnest statement in its own transaction.
func Postgres(pool *pgxpool.Pool, payload []byte) Writer {
	return func(ctx context.Context, keys []string) error {
		n := len(keys)
		bizs, parts, payloads := make([]string, n), make([]int32, n), make([][]byte, n)
		for i := range n {
			bizs[i], parts[i], payloads[i] = "bench", int32(i%8), payload
		}
		now := time.Now()
		rows, err := pool.Query(ctx, `INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body,
			payload, topic, forward_key, verify, verify_next_at, created_at, updated_at)
			SELECT b, k, p, 1, true, pl, 'bench', k, 'http://producer/check', $5, $6, $6
			FROM unnest($1::text[], $2::text[], $3::int[], $4::bytea[]) AS u(b, k, p, pl)
			ON CONFLICT (biz_id, message_key) DO NOTHING RETURNING id`,
			bizs, keys, parts, payloads, pgtype.Timestamptz{Time: now.Add(time.Minute), Valid: true}, now)
		if err != nil {
			return fmt.Errorf("raw insert: %w", err)
		}
		ids := make([]int64, 0, n)
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return fmt.Errorf("raw insert: %w", err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("raw insert: %w", err)
		}
		if len(ids) != n {
			return fmt.Errorf("raw insert: %d rows, want %d", len(ids), n)
		}
		tag, err := pool.Exec(ctx, `UPDATE eventcenter_messages m SET status = 2, send_status = 0, decided_at = $3,
			send_next_at = $3, updated_at = $3
			FROM unnest($1::text[], $2::text[]) AS u(b, k) WHERE m.biz_id = u.b AND m.message_key = u.k`, bizs, keys, now)
		if err != nil || tag.RowsAffected() != int64(n) {
			return fmt.Errorf("raw update committed: %v, %v", err, tag)
		}
		tag, err = pool.Exec(ctx, `UPDATE eventcenter_messages m SET send_status = 1, sent_at = $2, updated_at = $2
			FROM unnest($1::bigint[]) AS u(id) WHERE m.id = u.id`, ids, now)
		if err != nil || tag.RowsAffected() != int64(n) {
			return fmt.Errorf("raw update sent: %v, %v", err, tag)
		}
		return nil
	}
}

// SQLite writes each step as one transaction of multi-row statements of at
// most 500 parameters (SQLite's analogue of unnest; the modernc driver binds
// parameters in quadratic time).
func SQLite(db *sql.DB, payload []byte) Writer {
	return func(ctx context.Context, keys []string) error {
		n := len(keys)
		now := time.Now().UnixMicro()
		ids := make([]any, 0, n)
		err := inChunks(ctx, db, n, 8, func(tx *sql.Tx, lo, hi int) error {
			args := make([]any, 0, 8*(hi-lo))
			for i := lo; i < hi; i++ {
				args = append(args, "bench", keys[i], i%8, payload, keys[i], now+60e6, now, now)
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
			return fmt.Errorf("raw insert: %v, %d rows, want %d", err, len(ids), n)
		}
		err = inChunks(ctx, db, n, 2, func(tx *sql.Tx, lo, hi int) error {
			args := make([]any, 0, 2*(hi-lo)+3)
			for i := lo; i < hi; i++ {
				args = append(args, "bench", keys[i])
			}
			_, err := tx.ExecContext(ctx, `WITH u(b, k) AS (VALUES `+placeholders(hi-lo, 2)+`)
				UPDATE eventcenter_messages SET status = 2, send_status = 0, decided_at = ?, send_next_at = ?, updated_at = ?
				FROM u WHERE biz_id = u.b AND message_key = u.k`, append(args, now, now, now)...)
			return err
		})
		if err != nil {
			return fmt.Errorf("raw update committed: %w", err)
		}
		err = inChunks(ctx, db, n, 1, func(tx *sql.Tx, lo, hi int) error {
			_, err := tx.ExecContext(ctx, `WITH u(id) AS (VALUES `+placeholders(hi-lo, 1)+`)
				UPDATE eventcenter_messages SET send_status = 1, sent_at = ?, updated_at = ? FROM u
				WHERE eventcenter_messages.id = u.id`, append(slices.Clone(ids[lo:hi]), now, now)...)
			return err
		})
		if err != nil {
			return fmt.Errorf("raw update sent: %w", err)
		}
		return nil
	}
}

// inChunks runs fn over [0,n) in chunks of at most 500/cols rows, in one
// transaction.
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

// MySQL writes each step as one multi-row statement in its own
// transaction (autocommit): a multi-row INSERT, then UPDATEs by key (the
// batch's keys in one IN list: MySQL has no RETURNING for the ids). db is
// opened with store/mysql.OpenDB (parameters interpolated by the driver).
func MySQL(db *sql.DB, payload []byte) Writer {
	return func(ctx context.Context, keys []string) error {
		n := len(keys)
		now := time.Now().UTC()
		args := make([]any, 0, 8*n)
		for i, k := range keys {
			args = append(args, "bench", k, i%8, payload, k, now.Add(time.Minute), now, now)
		}
		_, err := db.ExecContext(ctx, "INSERT INTO eventcenter_messages (biz_id, message_key, `partition`, payload, "+
			"forward_key, verify_next_at, created_at, updated_at, status, has_body, topic, verify) VALUES "+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, 1, TRUE, 'bench', 'http://producer/check'), ", n), ", "),
			args...)
		if err != nil {
			return fmt.Errorf("raw insert: %w", err)
		}
		in := strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
		keyArgs := make([]any, 0, n+3)
		for _, k := range keys {
			keyArgs = append(keyArgs, k)
		}
		r, err := db.ExecContext(ctx, `UPDATE eventcenter_messages SET status = 2, send_status = 0, decided_at = ?,
			send_next_at = ?, updated_at = ? WHERE biz_id = 'bench' AND message_key IN (`+in+`)`,
			append([]any{now, now, now}, keyArgs...)...)
		if err := rowsAffected(r, err, n); err != nil {
			return fmt.Errorf("raw update committed: %w", err)
		}
		r, err = db.ExecContext(ctx, `UPDATE eventcenter_messages SET send_status = 1, sent_at = ?, updated_at = ?
			WHERE biz_id = 'bench' AND message_key IN (`+in+`)`, append([]any{now, now}, keyArgs...)...)
		if err := rowsAffected(r, err, n); err != nil {
			return fmt.Errorf("raw update sent: %w", err)
		}
		return nil
	}
}

func rowsAffected(r sql.Result, err error, want int) error {
	if err != nil {
		return err
	}
	n, err := r.RowsAffected()
	if err != nil {
		return err
	}
	if n != int64(want) {
		return fmt.Errorf("%d rows, want %d", n, want)
	}
	return nil
}
