#!/usr/bin/env bash
# The core figures on PostgreSQL (docs/performance.md "The core path"):
# 16,000 msg/s for 30 s, bursts of 100,000 and 20,000, 100,000 check-backs
# (from the first send, and as a standing backlog), the broker in its own
# process, and with "long" 10 minutes at 9,000 msg/s with autovacuum on.
# Usage: core-pg.sh OUTDIR [BASE_COMMIT] [long]
# Builds ectools and ecbroker from this tree; with BASE_COMMIT also
# ectools from that commit (e.g. the last release) and alternates the two,
# run by run, so that both see the same machine (reports *-base-*.json).
# PostgreSQL at $PG. Reports: OUTDIR/<figure>-<run>.json.
set -euo pipefail
out=$1; base=${2:-}; long=${3:-}
PG=${PG:-'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'}
tmp=$(mktemp -d); trap 'git worktree remove --force $tmp/base 2>/dev/null || true; rm -rf $tmp' EXIT
mkdir -p "$out"
go build -o $tmp/ect ./cmd/ectools
go build -o $tmp/ecbroker ./cmd/ecbroker
bins=(ect)
if [ -n "$base" ]; then
  git worktree add -q $tmp/base "$base"
  (cd $tmp/base && go build -o $tmp/ect-base ./cmd/ectools)
  bins+=(ect-base)
fi
name() { local fig=$1 bin=$2 i=$3; [ "$bin" = ect ] && echo "$out/$fig-$i.json" || echo "$out/$fig-base-$i.json"; }
run() { local file=$1 bin=$2; shift 2; $tmp/$bin bench --store postgres --dsn "$PG" "$@" --json "$file" > /dev/null 2>&1 || true; sleep 5; }
for i in 1 2 3; do
  for b in "${bins[@]}"; do
    run "$(name 16k-30s $b $i)" $b --duration 30s --rate 16000 --baselines=false
    run "$(name checkback-100k $b $i)" $b --messages 100000 --checkback-ratio 1 --baselines=false
    run "$(name burst-100k $b $i)" $b --messages 100000
    run "$(name burst-20k $b $i)" $b --messages 20000
    # a standing backlog: every PREPARE is sent before the first is due
    run "$(name checkback-100k-standing $b $i)" $b --messages 100000 --checkback-ratio 1 --checkback-first-delay 25s --baselines=false
    # the broker in its own process, a fresh one per run
    $tmp/ecbroker --port 19092 --partitions 8 > /dev/null 2>&1 & bp=$!; sleep 1
    run "$(name ecbroker-16k-30s $b $i)" $b --brokers 127.0.0.1:19092 --duration 30s --rate 16000 --baselines=false
    kill $bp; wait $bp 2>/dev/null || true
  done
done
[ "$long" = long ] || exit 0
psql "$PG" -qc "ALTER SYSTEM SET autovacuum = on" -c "SELECT pg_reload_conf()" > /dev/null
run "$out/10m-9k-autovacuum.json" ect --duration 10m --rate 9000 --broker-retention 10s --heap-every 30s --baselines=false
psql "$PG" -qc "ALTER SYSTEM RESET autovacuum" -c "SELECT pg_reload_conf()" > /dev/null
