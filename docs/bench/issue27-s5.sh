#!/usr/bin/env bash
# Issue 27's scale proof (26 November, session 5): scheduled delivery.
# Usage: issue27-s5.sh OUTDIR [held|due|rates|held-more|final|both|all]
# 1. held: 10,000 msg/s of immediate messages for 30 s, without and with
#    1,000,000 scheduled messages held in PostgreSQL (due an hour after the
#    run and later), alternated, three runs each: the immediate p99.
# 2. due: 1,000,000 scheduled messages falling due at 10,000/s, no other
#    load but 20,000 immediate messages at the start (the --messages
#    default), three runs: delivery lateness.
# rates: the same at lower due rates (no other load), one run each: the
#    highest rate this machine sustained with lateness p99 <= 1 s.
# held-more: pairs 4 to 7 of "held", later in the session (with the
#    shared count of the table, 586b356).
# final: on the final tree (the table settled by VACUUM (ANALYZE) and
#    CHECKPOINT after seeding), four "held" pairs and three "due" runs.
# 3. both: the same while 10,000 msg/s of immediate messages flow (20,000
#    msg/s in all, beyond this machine's 16,000), one run.
# The scheduled messages are written into the center's store by the
# center's ingest conversion and store, not through Kafka (ectools bench
# --help). PostgreSQL at $PG. Reports OUTDIR/2026-11-26-s5-sched-*.json,
# the tables beside them (.txt).
set -euo pipefail
out=$1; what=${2:-all}
PG=${PG:-'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'}
tmp=$(mktemp -d); trap 'rm -rf $tmp' EXIT
go build -o $tmp/ectools ./cmd/ectools
p=$out/2026-11-26-s5-sched
run() {
  local name=$1; shift
  echo "$(date -u +%T) $name: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  $tmp/ectools bench --store postgres --dsn "$PG" --broker-retention 20s "$@" --json $p-$name.json > $p-$name.txt 2> $tmp/err || {
    echo "$name failed: $(tail -3 $tmp/err)" >&2; }
  sleep 5
}
if [ "$what" = held ] || [ "$what" = all ]; then
  for i in 1 2 3; do
    run 10k-30s-nobacklog-$i --duration 30s --rate 10000 --baselines=false
    run 10k-30s-held1m-$i --duration 30s --rate 10000 --baselines=false --scheduled 1000000
  done
fi
if [ "$what" = due ] || [ "$what" = all ]; then
  for i in 1 2 3; do
    run due1m-10k-$i --scheduled 1000000 --scheduled-due-rate 10000 --scheduled-lead 60s --baselines=false
  done
fi
if [ "$what" = rates ] || [ "$what" = all ]; then
  for r in 7000 5000; do
    run due1m-$r-1 --scheduled 1000000 --scheduled-due-rate $r --scheduled-lead 60s --messages 0 --baselines=false
  done
fi
if [ "$what" = held-more ]; then
  for i in 4 5 6 7; do
    run 10k-30s-nobacklog-$i --duration 30s --rate 10000 --baselines=false
    run 10k-30s-held1m-$i --duration 30s --rate 10000 --baselines=false --scheduled 1000000
  done
fi
if [ "$what" = final ]; then
  for i in 1 2 3 4; do
    run 10k-30s-final-nobacklog-$i --duration 30s --rate 10000 --baselines=false
    run 10k-30s-final-held1m-$i --duration 30s --rate 10000 --baselines=false --scheduled 1000000
  done
  for i in 1 2 3; do
    run due1m-10k-final-$i --scheduled 1000000 --scheduled-due-rate 10000 --scheduled-lead 60s --messages 0 --baselines=false
  done
fi
if [ "$what" = both ] || [ "$what" = all ]; then
  run due1m-10k-with-10k-immediate-1 --scheduled 1000000 --scheduled-due-rate 10000 --scheduled-lead 60s --duration 150s --rate 10000 --baselines=false
fi
