#!/bin/bash
# The PostgreSQL statements of a check-back, without the center: CPU of
# the database backend per row (from /proc, so on the database's host, as
# a superuser), for the schema of a git revision.
#
#   bash docs/bench/checkback-statements-pg.sh DSN REV [BATCHES]
#
# BATCHES × 1,000 PREPAREs are inserted (one statement per 1,000, as ingest
# writes them), leased as the check-back claim leases them (by id, SKIP
# LOCKED, RETURNING every column), then answered commit and sent as the
# verifier's apply writes them (SELECT ... FOR UPDATE by bizID and key,
# then one UPDATE, in one transaction). Prints µs of backend CPU per row
# for each step (10 ms clock ticks: use 40 batches or more).
set -euo pipefail
DSN=$1 REV=$2 N=${3:-40}
S=ckstmt_$$
MIG=$(mktemp -d)
trap 'rm -rf "$MIG"; psql "$DSN" -qc "drop schema if exists $S cascade" >/dev/null 2>&1 || true' EXIT
for f in $(git ls-tree --name-only "$REV" store/postgres/migrations/); do git show "$REV:$f" >"$MIG/$(basename "$f")"; done
psql "$DSN" -qc "create schema $S"
for f in "$MIG"/*.sql; do
	(echo "set search_path=$S;"; sed 's/CONCURRENTLY //' "$f") | psql "$DSN" -q -v ON_ERROR_STOP=1 >/dev/null
done
cpu() { echo "select split_part(pg_read_file('/proc/' || :pid || '/stat'), ' ', 14)::bigint + split_part(pg_read_file('/proc/' || :pid || '/stat'), ' ', 15)::bigint as $1 \\gset"; }
{
	echo "set search_path = $S;"
	echo '\set ON_ERROR_STOP 1'
	echo '\o /dev/null'
	echo 'select pg_backend_pid() as pid \gset'
	cpu t0
	for ((b = 0; b < N; b++)); do lo=$((b * 1000 + 1)) hi=$((b * 1000 + 1000))
		echo "INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body, payload, headers, topic, verify, verify_next_at, created_at, updated_at)
 SELECT 'bench', 'key-' || g, g % 8, 1, true, convert_to(repeat('x', 256), 'UTF8'), '\\x0102'::bytea, 'ecbench', 'http://127.0.0.1:1234/check', now() - interval '1s', now(), now() FROM generate_series($lo, $hi) g RETURNING id;"
	done
	cpu t1
	for ((b = 0; b < N; b++)); do lo=$((b * 1000 + 1)) hi=$((b * 1000 + 1000))
		echo "UPDATE eventcenter_messages SET verify_next_at = now() + interval '30s', lease_token = 12345, verify_attempts = verify_attempts + 1
 WHERE id = ANY(ARRAY(SELECT id FROM eventcenter_messages WHERE id = ANY(ARRAY(SELECT generate_series($lo::bigint, $hi::bigint))) AND (status = 1) IS TRUE FOR UPDATE SKIP LOCKED)) RETURNING *;"
	done
	cpu t2
	for ((b = 0; b < N; b++)); do lo=$((b * 1000 + 1)) hi=$((b * 1000 + 1000))
		echo "BEGIN;
SELECT m.* FROM eventcenter_messages m JOIN unnest(ARRAY(SELECT 'bench' FROM generate_series($lo, $hi)), ARRAY(SELECT 'key-' || g FROM generate_series($lo, $hi) g)) AS r(rb, rk)
 ON m.biz_id = r.rb AND m.message_key = r.rk ORDER BY m.id FOR UPDATE OF m;
UPDATE eventcenter_messages AS m SET status = 2, send_status = 1, send_ref = '0/' || u.id, sent_at = now(), decided_at = now(), updated_at = now(), lease_token = 0
 FROM unnest(ARRAY(SELECT generate_series($lo::bigint, $hi::bigint))) AS u(id) WHERE m.id = u.id;
COMMIT;"
	done
	cpu t3
	echo '\o'
	echo "select '$REV' rev, $N * 1000 AS rows, round((:t1 - :t0) * 10000.0 / ($N * 1000), 1) AS insert_us, round((:t2 - :t1) * 10000.0 / ($N * 1000), 1) AS claim_us,
 round((:t3 - :t2) * 10000.0 / ($N * 1000), 1) AS answer_us, round((:t3 - :t0) * 10000.0 / ($N * 1000), 1) AS total_us;"
} | psql "$DSN" -q -A -F ' ' -t
