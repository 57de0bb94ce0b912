#!/usr/bin/env bash
# Issue 26, sixth session: what the writes of one message cost PostgreSQL,
# without the center: 50,000 messages in batches of 500 (one transaction
# per statement batch, as the center writes them), on the real schema
# (migrations 0001-0008), in a scratch schema. Three variants, alternated,
# RUNS times each, a fresh schema per run:
#   unordered   one INSERT, already SENT (the inline send)
#   ordered     today's ordered message: the counter upsert, an INSERT
#               leased and pending, and, after the send, the sent mark
#               (a non-HOT UPDATE), each its own transaction
#   sentfirst   the design in docs/performance.md: the counter upsert and
#               an INSERT already SENT with confirmed = false (a column no
#               index mentions; an index on every sequenced row instead
#               of the holders' one), then confirmed = true, which can be
#               HOT only where the row's page has room
#   sentfirst90, sentfirst50  the same with fillfactor 90 or 50 on the
#               messages
#   watermark   the per-partition design in docs/performance.md: an
#               INSERT already SENT with its sequence (the index on every
#               sequenced row) and one row per batch for the partition's
#               sent watermark; no counter, no per-message mark
#   counter     the counter upsert alone (what the key's counter costs)
# The marks find their rows by id (a fresh table numbers them 1, 2, ...,
# as the messages are numbered here), as the center's do. Not included:
# the ingest's look-ups (the same for all), the holders' probe and the
# look-ups of the next message after a mark.
# Prints the seconds of each run and the PostgreSQL backend's CPU seconds
# (from /proc, the backend's utime+stime), and the HOT share of the
# messages' updates.
# Usage: issue26-s6-writes.sh [RUNS]   PostgreSQL at $PG (run as root: /proc of the backend)
set -euo pipefail
runs=${1:-3}
PG=${PG:-'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'}
dir=$(cd "$(dirname "$0")/../../store/postgres/migrations" && pwd)
n=50000; b=500
schema() { # $1 schema name, $2 the messages' fill factor: the migrations, then the variants' extras
  { echo "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $1 CASCADE; CREATE SCHEMA $1; SET search_path = $1;"
    for f in "$dir"/*.sql; do sed 's/CONCURRENTLY //' "$f"; echo; done
    echo "ALTER TABLE eventcenter_messages ADD COLUMN confirmed boolean NOT NULL DEFAULT true;"
    echo "ALTER TABLE eventcenter_messages SET (fillfactor = $2);"
    echo "CREATE TABLE eventcenter_watermarks (part int PRIMARY KEY, sent bigint NOT NULL) WITH (fillfactor = 50); INSERT INTO eventcenter_watermarks VALUES (0, 0);"
    echo "CREATE INDEX eventcenter_messages_order_seqs ON eventcenter_messages (biz_id, order_key, target, topic, order_seq) WHERE order_seq > 0;"
  } | psql -q -X "$PG" > /dev/null
}
cols="biz_id, message_key, partition, status, has_body, payload, headers, target, topic, created_at, updated_at"
vals() { echo "'b', 'k' || g, g % 8, 2, true, '\\x0102030405060708091011121314151617181920'::bytea, '\\x'::bytea, 'kafka', 'orders', now(), now()"; }
script() { # $1 variant $2 schema
  echo "SET search_path = $2;"
  for ((lo = 1; lo <= n; lo += b)); do
    hi=$((lo + b - 1)); g="generate_series($lo, $hi) g"
    case $1 in
    unordered)
      echo "INSERT INTO eventcenter_messages ($cols, send_status, sent_at, send_ref) SELECT $(vals), 1, now(), 'orders/0@' || g FROM $g;" ;;
    watermark)
      echo "BEGIN;"
      echo "INSERT INTO eventcenter_messages ($cols, order_key, order_seq, send_status, sent_at, send_ref) SELECT $(vals), 'o' || (g % 10000), (g - 1) / 10000 + 1, 1, now(), '' FROM $g;"
      echo "COMMIT;"
      echo "UPDATE eventcenter_watermarks SET sent = $hi WHERE part = 0;" ;;
    counter)
      echo "INSERT INTO eventcenter_order_keys (biz_id, order_key, target, topic, last_seq) SELECT 'b', 'o' || (g % 10000), 'kafka', 'orders', 1 FROM $g ORDER BY 2 ON CONFLICT (biz_id, order_key, target, topic) DO UPDATE SET last_seq = eventcenter_order_keys.last_seq + excluded.last_seq;" ;;
    ordered|sentfirst*)
      # 10,000 keys: message g has key g % 10000 and is its key's (g-1)/10000+1-th.
      echo "BEGIN;"
      echo "INSERT INTO eventcenter_order_keys (biz_id, order_key, target, topic, last_seq) SELECT 'b', 'o' || (g % 10000), 'kafka', 'orders', 1 FROM $g ORDER BY 2 ON CONFLICT (biz_id, order_key, target, topic) DO UPDATE SET last_seq = eventcenter_order_keys.last_seq + excluded.last_seq;"
      if [ "$1" = ordered ]; then
        echo "INSERT INTO eventcenter_messages ($cols, order_key, order_seq, send_next_at, lease_token) SELECT $(vals), 'o' || (g % 10000), (g - 1) / 10000 + 1, now() + interval '30 s', 7 FROM $g;"
        echo "COMMIT;"
        echo "UPDATE eventcenter_messages SET send_status = 1, sent_at = now(), updated_at = now(), send_ref = 'orders/0@' || id, last_error = '' WHERE id = ANY(ARRAY(SELECT g::bigint FROM $g)) AND has_body IS TRUE AND status = 2 AND send_status = 0;"
      else
        echo "INSERT INTO eventcenter_messages ($cols, order_key, order_seq, send_status, sent_at, confirmed) SELECT $(vals), 'o' || (g % 10000), (g - 1) / 10000 + 1, 1, now(), false FROM $g;"
        echo "COMMIT;"
        echo "UPDATE eventcenter_messages SET confirmed = true, send_ref = 'orders/0@' || id WHERE id = ANY(ARRAY(SELECT g::bigint FROM $g));"
      fi ;;
    esac
  done
}
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
tck=$(getconf CLK_TCK)
for ((i = 1; i <= runs; i++)); do
  for v in unordered ordered sentfirst sentfirst90 sentfirst50 watermark counter; do
    s=exp_$v; ff=100; case $v in sentfirst90) ff=90 ;; sentfirst50) ff=50 ;; esac; schema $s $ff
    coproc P { psql -q -X -A -t "$PG"; }
    echo "SELECT pg_backend_pid();" >&"${P[1]}"; read -r pid <&"${P[0]}"
    c0=$(cpu "$pid"); t0=$(date +%s.%N)
    script $v $s >&"${P[1]}"; echo "SELECT 'done';" >&"${P[1]}"
    out=""; while read -r line <&"${P[0]}"; do [ "$line" = done ] && break; out="$out $line"; done
    t1=$(date +%s.%N); c1=$(cpu "$pid")
    exec {P[1]}>&-; wait "$P_PID" 2>/dev/null || true
    sleep 1.5 # the statistics of the last transactions
    st=$(psql -q -X -A -t -F ' ' "$PG" -c "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, pg_relation_size(relid) / 8192 FROM pg_stat_user_tables WHERE schemaname = '$s' AND relname IN ('eventcenter_messages', 'eventcenter_order_keys') ORDER BY 1" | tr '\n' ';')
    echo "$v run $i: $(echo "$t1 - $t0" | bc -l | cut -c1-5) s, backend CPU $(echo "($c1 - $c0) / $tck" | bc -l | cut -c1-5) s; table inserts updates hot pages: $st load $(cut -d' ' -f1 /proc/loadavg)"
    psql -q -X "$PG" -c "SET client_min_messages = warning; DROP SCHEMA $s CASCADE" > /dev/null
  done
done
