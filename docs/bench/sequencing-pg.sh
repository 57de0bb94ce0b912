#!/usr/bin/env bash
# What sequencing an ordered message costs PostgreSQL, statement by
# statement, outside the center (docs/performance.md "Per-key order").
# Each mode writes 50 batches of 1,000 written-ahead message rows (status
# committed, sent; 10,000 order keys, five rounds) in one transaction per
# batch, on the real table (migrated by the eventcenter binary given), and
# times the statements with psql's \timing:
#   none     the rows without an order key (the unordered floor)
#   upsert   the rows, and the key counters' INSERT ... ON CONFLICT DO
#            UPDATE as the center runs it (assignSeqsAheadSQL)
#   update   the rows, and the counters by a plain UPDATE ... FROM unnest
#            (existing keys only)
#   index    the rows with a unique index on (biz_id, order_key, target,
#            topic, order_seq) and no counter (sequencing checked by the
#            index instead of a counter row)
# The counters hold the 10,000 keys before each run (steady state).
# Usage: sequencing-pg.sh EVENTCENTER_BINARY RUNS > report.txt
# PostgreSQL at $PG (a URL). Prints one line per run and mode, then the
# medians per mode in µs per row.
set -euo pipefail
bin=$1; runs=$2
PG=${PG:-'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'}
schema=ec_seqproto
psql -q "$PG" -c "DROP SCHEMA IF EXISTS $schema CASCADE" -c "CREATE SCHEMA $schema" 2>/dev/null
cfg=$(mktemp --suffix .yaml)
trap 'rm -f "$cfg"; psql -q "$PG" -c "DROP SCHEMA IF EXISTS '$schema' CASCADE" 2>/dev/null' EXIT
sep='?'; [[ $PG == *\?* ]] && sep='&'
cat > "$cfg" <<EOF
store:
  driver: postgres
  dsn: "$PG${sep}options=-c%20search_path%3D$schema"
kafka:
  brokers: ["127.0.0.1:1"]
EOF
"$bin" migrate -c "$cfg" > /dev/null 2>&1

rows() { # $1: order key expression, $2: order seq expression
  cat <<EOF
INSERT INTO eventcenter_messages (biz_id, message_key, partition, status, has_body, payload, target, topic,
  forward_key, send_status, created_at, updated_at, decided_at, sent_at, order_key, order_seq, sent_ahead_offset)
SELECT 'bench', 'm-'||i, i%16, 2, true, decode(repeat('00', 40), 'hex'), 'kafka', 'bench-topic', 'm-'||i, 1,
  now(), now(), now(), now(), $1, $2, i
FROM generate_series(\$1::int, \$1::int + 999) i
EOF
}
script() { # $1: mode
  local mode=$1 extra="SELECT 1"
  echo "SET search_path=$schema;"
  echo "TRUNCATE eventcenter_messages, eventcenter_order_keys;"
  echo "DROP INDEX IF EXISTS seqproto_unique;"
  echo "INSERT INTO eventcenter_order_keys (biz_id, order_key, target, topic, last_seq, last_partition, last_offset)
        SELECT 'bench', 'ok-'||i, 'kafka', 'bench-topic', 1, 0, i FROM generate_series(0, 9999) i;"
  case $mode in
  none) echo "PREPARE ins(int) AS $(rows "''" 0);" ;;
  *) echo "PREPARE ins(int) AS $(rows "'ok-'||(i%10000)" "2 + i/10000");" ;;
  esac
  case $mode in
  upsert)
    echo "PREPARE seq(int) AS INSERT INTO eventcenter_order_keys (biz_id, order_key, target, topic, last_seq, last_partition, last_offset)
      SELECT 'bench', k, 'kafka', 'bench-topic', 1, 3, o FROM (SELECT 'ok-'||(i%10000) k, i o FROM generate_series(\$1, \$1 + 999) i ORDER BY 1) u
      ON CONFLICT (biz_id, order_key, target, topic) DO UPDATE SET last_seq = eventcenter_order_keys.last_seq + excluded.last_seq,
        prev_partition = eventcenter_order_keys.last_partition, prev_offset = eventcenter_order_keys.last_offset,
        last_partition = excluded.last_partition, last_offset = excluded.last_offset
      RETURNING last_seq, coalesce(prev_partition, -1), coalesce(prev_offset, -1);"
    extra='EXECUTE seq($1) \g /dev/null' ;;
  update)
    echo "PREPARE seq(int) AS UPDATE eventcenter_order_keys c SET last_seq = c.last_seq + 1,
        prev_partition = c.last_partition, prev_offset = c.last_offset, last_partition = 3, last_offset = u.o
      FROM (SELECT 'ok-'||(i%10000) k, i o FROM generate_series(\$1, \$1 + 999) i ORDER BY 1) u
      WHERE (c.biz_id, c.order_key, c.target, c.topic) = ('bench', u.k, 'kafka', 'bench-topic')
      RETURNING c.last_seq, coalesce(c.prev_partition, -1), coalesce(c.prev_offset, -1);"
    extra='EXECUTE seq($1) \g /dev/null' ;;
  index)
    echo "CREATE UNIQUE INDEX seqproto_unique ON eventcenter_messages (biz_id, order_key, target, topic, order_seq) WHERE order_seq > 0;" ;;
  esac
  echo "VACUUM ANALYZE eventcenter_order_keys;"
  echo '\timing on'
  for r in $(seq 0 49); do
    echo "BEGIN;"
    echo "EXECUTE ins($((r * 1000)));"
    if [[ $extra == EXECUTE* ]]; then echo "${extra//\$1/$((r * 1000))}"; else echo "$extra;"; fi
    echo "COMMIT;"
  done
}
for i in $(seq 1 "$runs"); do
  for mode in none upsert update index; do
    # Per batch: BEGIN, the rows, the sequencing (or SELECT 1), COMMIT;
    # the first five batches warm up.
    script "$mode" | psql -q "$PG" 2>&1 | grep '^Time:' | tail -n 200 | awk -v m="$mode" -v i="$i" -v la="$(cut -d' ' -f1 /proc/loadavg)" '
      NR%4==2 && NR>20 {ins+=$2; n++} NR%4==3 && NR>20 {seq+=$2} NR%4==0 && NR>20 {com+=$2}
      END {printf "run %d %-6s rows %5.2f  sequencing %5.2f  commit %4.2f  total %5.2f us/row  (load %s)\n", i, m, ins/n, seq/n, com/n, (ins+seq+com)/n, la}'
  done
done | tee /dev/stderr | awk '{t[$3]=t[$3] " " $11} END {for (m in t) {n=split(t[m], v, " "); asort(v); printf "median %-6s %.2f us/row over %d runs\n", m, (n%2 ? v[(n+1)/2] : (v[n/2]+v[n/2+1])/2), n}}' | sort
