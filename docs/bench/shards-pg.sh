#!/usr/bin/env bash
# One PostgreSQL server against two shards (docs/shards.md "Throughput"):
# two throwaway clusters on 55441/55442, then alternated runs of 200,000
# messages. Usage: shards-pg.sh OUTDIR (ectools built at /tmp/ectools).
set -euo pipefail
out=$1; bin=/usr/lib/postgresql/15/bin
mkdir -p "$out"
for p in 55441 55442; do
  d=/tmp/shard-$p; rm -rf $d; mkdir -p $d; chown postgres $d
  su postgres -c "$bin/initdb -D $d/data -U postgres --auth=trust" >/dev/null
  su postgres -c "$bin/pg_ctl -D $d/data -o '-p $p -k /tmp -c fsync=on' -l $d/log -w start" >/dev/null
done
trap 'for p in 55441 55442; do su postgres -c "/usr/lib/postgresql/15/bin/pg_ctl -D /tmp/shard-$p/data -m fast stop" >/dev/null; done' EXIT
a='postgres://postgres@127.0.0.1:55441/postgres?sslmode=disable'
b='postgres://postgres@127.0.0.1:55442/postgres?sslmode=disable'
for i in 1 2 3; do
  /tmp/ectools bench --store postgres --dsn "$a" --messages 200000 --json "$out/one-$i.json" > /dev/null
  /tmp/ectools bench --store sharded --dsn "$a,$b" --messages 200000 --json "$out/two-$i.json" > /dev/null
done
