package sharded

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// MoveResult says what MoveBuckets did.
type MoveResult struct {
	// Messages and Audit are the rows moved (copied to the target and
	// deleted from the source).
	Messages, Audit int
}

// messageColumns are the columns copied by MoveBuckets: all but id (the
// target assigns its own).
const messageColumns = `biz_id, message_key, partition, status, has_body, payload, headers, target, topic,
	forward_key, tag, verify, verify_attempts, verify_next_at, send_status, send_attempts, send_next_at,
	send_ref, lease_token, last_error, conflicts, created_at, updated_at, decided_at, sent_at, deliver_at`

const auditColumns = `biz_id, message_key, action, who, reason, at, status_before, status_after`

// moveBatch is how many rows MoveBuckets copies per statement batch.
const moveBatch = 500

// MoveBuckets moves the messages and audit records of the given buckets
// from one PostgreSQL shard to another (both migrated): it copies them to
// the target in one transaction, checks that every moved key is there,
// then deletes them from the source in one transaction.
//
// Run it with every instance of the center stopped (the rows must not
// change while they move); then switch store.shards to the new map and
// start the instances. It is safe to run again after a failure at any
// point: rows already on the target are left as they are (messages by
// key, audit records by content) and the source rows are deleted only
// once the target holds them all.
func MoveBuckets(ctx context.Context, from, to *pgxpool.Pool, buckets []int) (MoveResult, error) {
	return MoveBucketsWith(ctx, from, to, buckets, nil)
}

// Progress hears how far a move is (internal/progress.Reporter): phases
// "copy messages", "copy audit records" and "delete from source", with
// their row counts.
type Progress interface {
	Start(phase, unit string, total int64)
	Add(n int64)
	Done()
}

type noProgress struct{}

func (noProgress) Start(string, string, int64) {}
func (noProgress) Add(int64)                   {}
func (noProgress) Done()                       {}

// MoveBucketsWith is MoveBuckets reporting its progress to p (nil: none).
func MoveBucketsWith(ctx context.Context, from, to *pgxpool.Pool, buckets []int, p Progress) (MoveResult, error) {
	if p == nil {
		p = noProgress{}
	}
	in := make([]bool, Buckets)
	for _, b := range buckets {
		if b < 0 || b >= Buckets {
			return MoveResult{}, fmt.Errorf("move buckets: bucket %d outside 0-%d", b, Buckets-1)
		}
		in[b] = true
	}
	msgIDs, keys, err := idsInBuckets(ctx, from, "eventcenter_messages", in)
	if err != nil {
		return MoveResult{}, fmt.Errorf("move buckets: read source messages: %w", err)
	}
	auditIDs, _, err := idsInBuckets(ctx, from, "eventcenter_audit", in)
	if err != nil {
		return MoveResult{}, fmt.Errorf("move buckets: read source audit: %w", err)
	}
	res := MoveResult{Messages: len(msgIDs), Audit: len(auditIDs)}
	if len(msgIDs) == 0 && len(auditIDs) == 0 {
		return res, nil
	}
	err = pgx.BeginFunc(ctx, to, func(tx pgx.Tx) error {
		p.Start("copy messages", "messages", int64(len(msgIDs)))
		if err := copyRows(ctx, from, tx, msgIDs, p, `SELECT `+messageColumns+` FROM eventcenter_messages WHERE id = ANY($1) ORDER BY id`,
			`INSERT INTO eventcenter_messages (`+messageColumns+`) VALUES (%s) ON CONFLICT (biz_id, message_key) DO NOTHING`, 26); err != nil {
			return fmt.Errorf("copy messages: %w", err)
		}
		p.Start("copy audit records", "records", int64(len(auditIDs)))
		if err := copyRows(ctx, from, tx, auditIDs, p, `SELECT `+auditColumns+` FROM eventcenter_audit WHERE id = ANY($1) ORDER BY id`,
			`INSERT INTO eventcenter_audit (`+auditColumns+`) SELECT %s WHERE NOT EXISTS (SELECT 1 FROM eventcenter_audit
				WHERE biz_id = $1 AND message_key = $2 AND action = $3 AND who = $4 AND reason = $5 AND at = $6
				AND status_before = $7 AND status_after = $8)`, 8); err != nil {
			return fmt.Errorf("copy audit: %w", err)
		}
		p.Done()
		// Verify: every moved key is on the target.
		var n int
		bizs, ks := make([]string, len(keys)), make([]string, len(keys))
		for i, k := range keys {
			bizs[i], ks[i] = k[0], k[1]
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM eventcenter_messages m
			JOIN unnest($1::text[], $2::text[]) AS k(biz_id, message_key) USING (biz_id, message_key)`, bizs, ks).Scan(&n); err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		if n != len(keys) {
			return fmt.Errorf("verify: %d of %d moved messages on the target", n, len(keys))
		}
		return nil
	})
	if err != nil {
		return MoveResult{}, fmt.Errorf("move buckets: target: %w", err)
	}
	p.Start("delete from source", "rows", int64(len(msgIDs)+len(auditIDs)))
	err = pgx.BeginFunc(ctx, from, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM eventcenter_messages WHERE id = ANY($1)`, msgIDs); err != nil {
			return err
		}
		p.Add(int64(len(msgIDs)))
		_, err := tx.Exec(ctx, `DELETE FROM eventcenter_audit WHERE id = ANY($1)`, auditIDs)
		p.Add(int64(len(auditIDs)))
		return err
	})
	p.Done()
	if err != nil {
		return MoveResult{}, fmt.Errorf("move buckets: delete from source (copied to the target; run again): %w", err)
	}
	return res, nil
}

// idsInBuckets returns the IDs and keys of the rows of table whose key is
// in a bucket marked in in.
func idsInBuckets(ctx context.Context, pool *pgxpool.Pool, table string, in []bool) ([]int64, [][2]string, error) {
	rows, err := pool.Query(ctx, `SELECT id, biz_id, message_key FROM `+table+` ORDER BY id`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var ids []int64
	var keys [][2]string
	for rows.Next() {
		var id int64
		var biz, key string
		if err := rows.Scan(&id, &biz, &key); err != nil {
			return nil, nil, err
		}
		if in[Bucket(biz, key)] {
			ids = append(ids, id)
			keys = append(keys, [2]string{biz, key})
		}
	}
	return ids, keys, rows.Err()
}

// copyRows reads the rows with ids from the source by sel and writes each
// with ins (its %s replaced by $1..$ncols) in the target transaction.
func copyRows(ctx context.Context, from *pgxpool.Pool, tx pgx.Tx, ids []int64, p Progress, sel, ins string, ncols int) error {
	ph := ""
	for i := range ncols {
		if i > 0 {
			ph += ", "
		}
		ph += fmt.Sprintf("$%d", i+1)
	}
	stmt := fmt.Sprintf(ins, ph)
	for chunk := range slices.Chunk(ids, moveBatch) {
		rows, err := from.Query(ctx, sel, chunk)
		if err != nil {
			return err
		}
		var b pgx.Batch
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				rows.Close()
				return err
			}
			b.Queue(stmt, vals...)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
		p.Add(int64(len(chunk)))
	}
	return nil
}
