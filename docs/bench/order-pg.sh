#!/usr/bin/env bash
# Per-key order on PostgreSQL (docs/performance.md "Per-key order"):
# alternated bursts of 50,000 messages with 10,000 order keys and without,
# for one or several ectools binaries (this tree against a release, say).
# Usage: order-pg.sh OUTDIR RUNS TAG=ECTOOLS_BINARY [TAG=ECTOOLS_BINARY ...]
#   e.g. go build -o /tmp/ect-new ./cmd/ectools
#        git archive v1.2.0 | tar -x -C /tmp/old && (cd /tmp/old && go build -o /tmp/ect-old ./cmd/ectools)
#        bash docs/bench/order-pg.sh /tmp/order 3 base=/tmp/ect-old new=/tmp/ect-new
# Reports: OUTDIR/50k-{keys,none}-TAG-i.json. FIRST=n numbers the runs
# from n (default 1). PostgreSQL at $PG. The time and load average before
# each run go to stderr.
set -euo pipefail
out=$1; runs=$2; shift 2
PG=${PG:-'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'}
mkdir -p "$out"
run() { local bin=$1 file=$2; shift 2; echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg) $file" >&2
  "$bin" bench --store postgres --dsn "$PG" "$@" --json "$file" > /dev/null 2>&1 || true; sleep 3; }
first=${FIRST:-1}
for i in $(seq "$first" $((first + runs - 1))); do
  for tb in "$@"; do
    tag=${tb%%=*}; bin=${tb#*=}
    run "$bin" "$out/50k-keys-$tag-$i.json" --messages 50000 --order-keys 10000
    run "$bin" "$out/50k-none-$tag-$i.json" --messages 50000
  done
done
