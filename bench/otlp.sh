#!/usr/bin/env bash
# The opentelemetry input's rate (issue 42): OTLP/HTTP protobuf logs, batches of 512 records,
# 4 clients each waiting for its answers (bench/otlp_load.py, the OpenTelemetry Python
# protobuf classes from scripts/otel-python) → `output { null {} }`, 2 workers. Prints
# events/s from the first request until /_node/stats says every event left, and sluice's CPU
# per event (user + system). ROUNDS (default 3) runs, medians.
# Not yet: the OpenTelemetry Collector's own receiver on the same load (the issue's ratio).
# Usage: bench/otlp.sh [REQUESTS per client, default 500]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
REQUESTS=${1:-500}
ROUNDS=${ROUNDS:-3}
CLIENTS=4
BATCH=512
cargo build --release --quiet
PY=$(scripts/otel-python | sed 's/^SLUICE_OTEL_PYTHON=//')
DIR=$PWD/target/bench-otlp
mkdir -p "$DIR"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rates=""; cpus=""
for _ in $(seq "$ROUNDS"); do
  api=$(port); otlp=$(port)
  printf 'pipeline.workers: 2\napi.http.port: %s\npath.data: %s/data\n' "$api" "$DIR" > "$DIR/sluice.yml"
  target/release/sluice --log.level error --path.settings "$DIR" -e "input { opentelemetry { port => $otlp host => \"127.0.0.1\" } } output { null {} }" >/dev/null 2>&1 &
  pid=$!
  until curl -sf "127.0.0.1:$api/" >/dev/null; do sleep 0.1; done
  s=$(date +%s.%N)
  n=$("$PY" bench/otlp_load.py "$otlp" "$CLIENTS" "$REQUESTS" "$BATCH")
  until [ "$(curl -sf "127.0.0.1:$api/_node/stats/events" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"]["out"])' 2>/dev/null || echo 0)" -ge "$n" ]; do sleep 0.02; done
  e=$(date +%s.%N)
  ticks=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rates="$rates $(awk -v n="$n" -v s="$s" -v e="$e" 'BEGIN { printf "%.0f", n / (e - s) }')"
  cpus="$cpus $(awk -v n="$n" -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.3f", t / hz * 1e6 / n }')"
done
machine "$CLIENTS clients × $REQUESTS requests × $BATCH records, $ROUNDS rounds"
echo "| case | value |"
echo "|---|---|"
echo "| OTLP/HTTP protobuf logs → null (events/s, median) | $(echo "$rates" | median) |"
echo "| sluice's CPU per event (µs, user + system, median) | $(echo "$cpus" | median) |"
echo "(rounds: events/s$rates; CPU µs$cpus)"
