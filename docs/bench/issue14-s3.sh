#!/usr/bin/env bash
# The alternated before/after runs of issue 14's third session (26
# November): inline sends (the fast path sends before the store write).
# Usage: issue14-s3.sh OUTDIR BEFORE_COMMIT [long]
# Builds ectools from this tree ("after") and from BEFORE_COMMIT
# ("before"), and cmd/ecbroker; PostgreSQL at $PG. With "long", also the
# 10-minute run at 9,000 msg/s with autovacuum on (after only).
set -euo pipefail
out=$1; before=$2; long=${3:-}
PG=${PG:-'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'}
tmp=$(mktemp -d); trap 'git worktree remove --force $tmp/before 2>/dev/null || true; rm -rf $tmp' EXIT
go build -o $tmp/ect-after ./cmd/ectools
go build -o $tmp/ecbroker ./cmd/ecbroker
git worktree add -q $tmp/before "$before"
(cd $tmp/before && go build -o $tmp/ect-before ./cmd/ectools)
p=$out/2026-11-26-s3
run() { local file=$1 bin=$2; shift 2; $tmp/$bin bench --store postgres --dsn "$PG" "$@" --json $file > /dev/null 2>&1 || true; sleep 5; }
for i in 1 2 3; do
  run $p-pg-16k-30s-after-$i.json ect-after --duration 30s --rate 16000 --baselines=false
  run $p-pg-16k-30s-before-$i.json ect-before --duration 30s --rate 16000 --baselines=false
done
for i in 1 2 3; do
  run $p-pg-checkback-100k-after-$i.json ect-after --messages 100000 --checkback-ratio 1 --baselines=false
  run $p-pg-checkback-100k-before-$i.json ect-before --messages 100000 --checkback-ratio 1 --baselines=false
done
for i in 1 2 3; do
  run $p-pg-100k-after-$i.json ect-after --messages 100000
  run $p-pg-100k-before-$i.json ect-before --messages 100000
done
for i in 1 2 3; do # run after the rest on 26 November, the same way
  run $p-pg-20k-after-$i.json ect-after --messages 20000
  run $p-pg-20k-before-$i.json ect-before --messages 20000
done
for i in 1 2 3; do # a standing backlog: every PREPARE is sent before the first is due (after only: "before" has no first-call rate)
  run $p-pg-checkback-100k-stale-after-$i.json ect-after --messages 100000 --checkback-ratio 1 --checkback-first-delay 25s --baselines=false
done
for i in 1 2 3; do # --brokers: the broker in its own process, a fresh one per run
  for bin in ect-after ect-before; do
    $tmp/ecbroker --port 19092 --partitions 8 > /dev/null 2>&1 & bp=$!; sleep 1
    run $p-pg-ecbroker-16k-30s-${bin#ect-}-$i.json $bin --brokers 127.0.0.1:19092 --duration 30s --rate 16000 --baselines=false
    kill $bp; wait $bp 2>/dev/null || true
  done
done
[ "$long" = long ] || exit 0
psql "$PG" -qc "ALTER SYSTEM SET autovacuum = on" -c "SELECT pg_reload_conf()" > /dev/null
run $p-pg-10m-9k-autovacuum-after.json ect-after --duration 10m --rate 9000 --broker-retention 10s --heap-every 30s --baselines=false
psql "$PG" -qc "ALTER SYSTEM RESET autovacuum" -c "SELECT pg_reload_conf()" > /dev/null
