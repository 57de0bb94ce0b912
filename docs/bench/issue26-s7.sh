#!/usr/bin/env bash
# Issue 26, seventh session (27 November, morning): alternated runs with and without
# order keys, of one or several ectools binaries.
# Usage: issue26-s7.sh OUTDIR RUNS TAG=ECTOOLS_BINARY [TAG=ECTOOLS_BINARY ...]
#   e.g. go build -o /tmp/ect-new ./cmd/ectools
#        git archive 3de34ca | tar -x -C /tmp/old && (cd /tmp/old && go build -o /tmp/ect-old ./cmd/ectools)
#        bash docs/bench/issue26-s7.sh docs/bench 3 before=/tmp/ect-old after=/tmp/ect-new
# Per run i and binary: 50,000 messages with 10,000 order keys, then
# without. Reports: OUTDIR/2026-11-27-s7-order-pg-50k-{keys,none}-TAG-i.json.
# FIRST=n numbers the runs from n (default 1). PostgreSQL at $PG. The time and load average before each run go to stderr.
set -euo pipefail
out=$1; runs=$2; shift 2
PG=${PG:-'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'}
p=$out/2026-11-27-s7-order-pg-50k
run() { local bin=$1 file=$2; shift 2; echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg) $file" >&2
  "$bin" bench --store postgres --dsn "$PG" "$@" --json "$file" > /dev/null 2>&1 || true; sleep 3; }
first=${FIRST:-1}
for i in $(seq "$first" $((first + runs - 1))); do
  for tb in "$@"; do
    tag=${tb%%=*}; bin=${tb#*=}
    run "$bin" $p-keys-$tag-$i.json --messages 50000 --order-keys 10000
    run "$bin" $p-none-$tag-$i.json --messages 50000
  done
done
