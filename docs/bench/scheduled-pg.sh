#!/usr/bin/env bash
# Scheduled delivery on PostgreSQL (docs/performance.md "Scheduled
# delivery"). Usage: scheduled-pg.sh OUTDIR [held|due|all]
#   held: 10,000 msg/s of immediate messages for 30 s, without and with
#         1,000,000 scheduled messages held in the store (due an hour
#         after the run and later), alternated, six pairs: the immediate
#         p99 and the PostgreSQL CPU per immediate message.
#   due:  1,000,000 scheduled messages falling due at 10,000/s, nothing
#         else running, six runs: the delivery lateness.
# The scheduled messages are written into the store by the center's own
# ingest conversion and store, not through Kafka (ectools bench --help).
# PostgreSQL at $PG. Reports OUTDIR/*.json, the printed tables beside them
# (.txt); the load average of each run goes to stderr.
set -euo pipefail
out=$1; what=${2:-all}
PG=${PG:-'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'}
tmp=$(mktemp -d); trap 'rm -rf $tmp' EXIT
mkdir -p "$out"
go build -o $tmp/ectools ./cmd/ectools
run() {
  local name=$1; shift
  echo "$(date -u +%T) $name: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  $tmp/ectools bench --store postgres --dsn "$PG" --broker-retention 20s "$@" --json "$out/$name.json" > "$out/$name.txt" 2> $tmp/err || {
    echo "$name failed: $(tail -3 $tmp/err)" >&2; }
  sleep 5
}
if [ "$what" = held ] || [ "$what" = all ]; then
  for i in 1 2 3 4 5 6; do
    run 10k-30s-none-$i --duration 30s --rate 10000 --baselines=false
    run 10k-30s-held1m-$i --duration 30s --rate 10000 --baselines=false --scheduled 1000000
  done
fi
if [ "$what" = due ] || [ "$what" = all ]; then
  for i in 1 2 3 4 5 6; do
    run due-1m-10k-$i --scheduled 1000000 --scheduled-due-rate 10000 --scheduled-lead 60s --messages 0 --baselines=false
  done
fi
