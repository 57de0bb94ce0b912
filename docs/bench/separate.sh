#!/usr/bin/env bash
# 16,000 msg/s for 30 s with every part in its own process, as production
# runs them: cmd/ecbroker, `eventcenter serve` (PostgreSQL schema ecsep,
# recreated) and `ectools bench --external`. Prints the CPU the center's
# and the broker's processes used (from /proc); the bench's report has its
# own. Usage: separate.sh OUTFILE.json
set -euo pipefail
out=$1
PG=${PG:-'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'}
tmp=$(mktemp -d); trap 'rm -rf $tmp' EXIT
go build -o $tmp/eventcenter ./cmd/eventcenter
go build -o $tmp/ectools ./cmd/ectools
go build -o $tmp/ecbroker ./cmd/ecbroker
psql "$PG" -qc "DROP SCHEMA IF EXISTS ecsep CASCADE" -c "CREATE SCHEMA ecsep"
cat > $tmp/center.yaml <<YAML
kafka: {brokers: ["127.0.0.1:19092"], control_topic: eventcenter.control, group: ecsep, create_topics: true}
store: {driver: postgres, dsn: "$PG&search_path=ecsep", max_conns: 8, auto_migrate: true}
http: {listen: 127.0.0.1:18080}
admin: {insecure: true}
forward: {targets: [{name: kafka, type: kafka, auto_create_topics: true}]}
log: {level: warn}
YAML
$tmp/ecbroker --port 19092 --partitions 8 --topics eventcenter.control > $tmp/broker.log 2>&1 & bp=$!
sleep 1
$tmp/eventcenter serve -c $tmp/center.yaml > $tmp/center.log 2>&1 & cp=$!
for _ in $(seq 50); do curl -sf 127.0.0.1:18080/readyz > /dev/null && break; sleep 0.2; done
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
c0=$(ticks $cp); b0=$(ticks $bp)
$tmp/ectools bench --external --brokers 127.0.0.1:19092 --duration 30s --rate 16000 --baselines=false --json "$out"
c1=$(ticks $cp); b1=$(ticks $bp)
echo "center process $(( (c1-c0)*10 )) ms CPU, broker process $(( (b1-b0)*10 )) ms CPU"
kill $cp; wait $cp || true; kill $bp; wait $bp || true
psql "$PG" -qc "DROP SCHEMA ecsep CASCADE"
