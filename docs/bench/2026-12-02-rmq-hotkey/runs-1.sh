#!/bin/bash
set -u
PG="postgres://postgres@127.0.0.1:5433/test?sslmode=disable"
out=/work/wt/rmqhot/docs/bench/2026-12-02-rmq-hotkey
bin=/tmp/rmqhot-ectools
one() { # tag target extra...
  local f=$out/$1; local target=$2; shift 2
  echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg) $f" >> "$out/log"
  nice -n 19 "$bin" bench --store postgres --dsn "$PG" --baselines=false --messages 20000 --target "$target" --json "$f.json" "$@" > "$f.txt" 2> "$f.err"
  echo "rc=$? $(grep -E 'center throughput|commit → forward ' "$f.txt" | tr -s ' ' | tr '\n' ' ')" >> "$out/log"
}
for i in 1 2 3; do
  if [ $((i % 2)) = 1 ]; then
    one hot-rocketmq-$i rocketmq --hot-key; one hot-kafka-$i kafka --hot-key
  else
    one hot-kafka-$i kafka --hot-key; one hot-rocketmq-$i rocketmq --hot-key
  fi
done
for i in 1 2 3; do one plain-rocketmq-$i rocketmq; done
echo done >> "$out/log"
