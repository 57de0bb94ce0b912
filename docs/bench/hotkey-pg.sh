#!/bin/bash
# Alternated pairs of ectools bench runs of two builds on PostgreSQL, one
# report each (OUTDIR/TAG-old-N and TAG-new-N, .txt and .json) and a line
# per run in OUTDIR/log (start time, load average, throughput, latency).
#
#   PG=postgres://... bash docs/bench/hotkey-pg.sh OUTDIR PAIRS TAG OLD_BIN NEW_BIN -- bench flags...
#
# e.g. ... 3 hot2k-fd30s bin/ectools-main bin/ectools -- --messages 2000 --hot-key --checkback-first-delay 30s
set -u
out=$1 n=$2 tag=$3 old=$4 new=$5
shift 6
mkdir -p "$out"
for i in $(seq 1 "$n"); do
  for b in old new; do
    bin=$old; [ "$b" = new ] && bin=$new
    f=$out/$tag-$b-$i
    echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg) $f" >> "$out/log"
    nice -n 19 "$bin" bench --store postgres --dsn "$PG" --baselines=false --json "$f.json" "$@" > "$f.txt" 2> "$f.err"
    echo "rc=$? $(grep -E 'center throughput|commit → forward ' "$f.txt" | tr -s ' ' | tr '\n' ' ')" >> "$out/log"
  done
done
