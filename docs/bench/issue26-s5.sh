#!/usr/bin/env bash
# The alternated before/after runs of issue 26's fifth session (26
# November): per-key order, the next message of a key leased with its
# predecessor's sent mark, parked messages unleased.
# Usage: issue26-s5.sh OUTDIR BEFORE_COMMIT [TAG]
# Builds ectools from this tree ("after") and from BEFORE_COMMIT
# ("before") and runs, alternated, three times each: 50,000 messages with
# 10,000 order keys and without, and 2,000 messages with one hot key.
# PostgreSQL at $PG. Reports: OUTDIR/2026-11-26-s5-order-*-{after,before}[-TAG]-{1,2,3}.json.
set -euo pipefail
out=$1; before=$2; tag=${3:+-$3}
PG=${PG:-'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'}
tmp=$(mktemp -d); trap 'rm -rf $tmp' EXIT
go build -o $tmp/ect-after ./cmd/ectools
mkdir $tmp/before && git archive "$before" | tar -x -C $tmp/before
(cd $tmp/before && go build -o $tmp/ect-before ./cmd/ectools)
p=$out/2026-11-26-s5-order
run() { local file=$1 bin=$2; shift 2; $tmp/$bin bench --store postgres --dsn "$PG" "$@" --json $file > /dev/null 2>&1 || true; sleep 3; }
for i in 1 2 3; do
  for w in after before; do
    run $p-pg-50k-keys-$w$tag-$i.json ect-$w --messages 50000 --order-keys 10000
    run $p-pg-50k-none-$w$tag-$i.json ect-$w --messages 50000
  done
done
for i in 1 2 3; do
  for w in after before; do
    run $p-pg-hot-2k-$w$tag-$i.json ect-$w --messages 2000 --hot-key --baselines=false
  done
done
