#!/usr/bin/env bash
# OTLP in and out (issue 42), each against the OpenTelemetry Collector (tests/otelcol,
# scripts/build-otelcol) in the same run:
# - input: OTLP/HTTP protobuf logs, batches of 512 records, 4 clients each waiting for its
#   answers (bench/otlp_load.py, the OpenTelemetry Python protobuf classes from
#   scripts/otel-python) → sluice's `input { opentelemetry {} } output { null {} }` (2 workers),
#   and the same load → the collector's OTLP receiver → its nop exporter, both timed until the
#   last answer (sluice answers once the records are queued, the collector once its exporter
#   has them; sluice's /_node/stats must then say every event left). Prints events/s, CPU
#   per event (sluice's measured after every event left), and sluice/collector.
# - output: a generator of EVENTS events → `opentelemetry` output → the collector's OTLP
#   receiver → nop, timed from start to sluice's exit; and the same generator → `null` as the
#   baseline: events/s and output/null.
# ROUNDS (default 3) runs each, medians.
# Usage: bench/otlp.sh [REQUESTS per client, default 500] [EVENTS, default 2000000]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
REQUESTS=${1:-500}
EVENTS=${2:-2000000}
ROUNDS=${ROUNDS:-3}
CLIENTS=4
BATCH=512
cargo build --release --quiet
PY=$(scripts/otel-python | sed 's/^SLUICE_OTEL_PYTHON=//')
OTELCOL=$(scripts/build-otelcol)
DIR=$PWD/target/bench-otlp
mkdir -p "$DIR"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_per_event() { awk -v n="$2" -v t="$(awk '{ print $14 + $15 }' "/proc/$1/stat")" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.3f", t / hz * 1e6 / n }'; }
wait_port() { until (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do sleep 0.1; done; }
# collector_to_nop PORT: a collector receiving OTLP/HTTP on PORT, exporting to nop.
collector_to_nop() {
  printf 'receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:%s\nexporters:\n  nop:\nservice:\n  telemetry:\n    metrics:\n      level: none\n    logs:\n      level: error\n  pipelines:\n    logs:\n      receivers: [otlp]\n      exporters: [nop]\n' "$1" > "$DIR/otelcol.yaml"
  "$OTELCOL" --config "$DIR/otelcol.yaml" >/dev/null 2>&1 &
  COLLECTOR=$!
  wait_port "$1"
}

in_rates=""; in_cpus=""; col_rates=""; col_cpus=""; out_rates=""; null_rates=""; out_cpus=""
for _ in $(seq "$ROUNDS"); do
  # sluice's input.
  api=$(port); otlp=$(port)
  printf 'pipeline.workers: 2\napi.http.port: %s\npath.data: %s/data\n' "$api" "$DIR" > "$DIR/sluice.yml"
  target/release/sluice --log.level error --path.settings "$DIR" -e "input { opentelemetry { port => $otlp host => \"127.0.0.1\" grpc => false } } output { null {} }" >/dev/null 2>&1 &
  pid=$!
  until curl -sf "127.0.0.1:$api/" >/dev/null; do sleep 0.1; done
  s=$(date +%s.%N)
  n=$("$PY" bench/otlp_load.py "$otlp" "$CLIENTS" "$REQUESTS" "$BATCH")
  e=$(date +%s.%N)
  # Timed to the last answer, as the collector is (sluice answers once a request's records
  # are queued; what the bounded queue still holds then is a few batches). Then, untimed,
  # every event must have left, or the round fails.
  for _ in $(seq 100); do
    out=$(curl -sf "127.0.0.1:$api/_node/stats/events" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"]["out"])' 2>/dev/null || echo 0)
    [ "$out" -ge "$n" ] && break
    sleep 0.1
  done
  [ "$out" -ge "$n" ] || { echo "bench/otlp.sh: only $out of $n events left sluice" >&2; exit 1; }
  in_cpus="$in_cpus $(cpu_per_event "$pid" "$n")"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  in_rates="$in_rates $(awk -v n="$n" -v s="$s" -v e="$e" 'BEGIN { printf "%.0f", n / (e - s) }')"

  # The collector's receiver on the same load.
  cport=$(port)
  collector_to_nop "$cport"
  s=$(date +%s.%N)
  n=$("$PY" bench/otlp_load.py "$cport" "$CLIENTS" "$REQUESTS" "$BATCH")
  e=$(date +%s.%N)
  col_cpus="$col_cpus $(cpu_per_event "$COLLECTOR" "$n")"
  kill "$COLLECTOR"; wait "$COLLECTOR" 2>/dev/null || true
  col_rates="$col_rates $(awk -v n="$n" -v s="$s" -v e="$e" 'BEGIN { printf "%.0f", n / (e - s) }')"

  # The output, into the collector; and its baseline, into null.
  cport=$(port)
  collector_to_nop "$cport"
  printf 'pipeline.workers: 2\napi.enabled: false\npath.data: %s/data\n' "$DIR" > "$DIR/sluice.yml"
  gen="generator { count => $EVENTS message => \"GET /api/orders/17 200 31 ms\" add_field => { \"[resource][attributes][service.name]\" => \"orders\" \"[log][level]\" => \"INFO\" } }"
  read -r rate _ < <(rate_and_cpu "$EVENTS" target/release/sluice --log.level error --path.settings "$DIR" -e "input { $gen } output { opentelemetry { url => \"http://127.0.0.1:$cport\" } }")
  out_rates="$out_rates $rate"
  out_cpus="$out_cpus $(cpu_per_event "$COLLECTOR" "$EVENTS")"
  kill "$COLLECTOR"; wait "$COLLECTOR" 2>/dev/null || true
  read -r rate _ < <(rate_and_cpu "$EVENTS" target/release/sluice --log.level error --path.settings "$DIR" -e "input { $gen } output { null {} }")
  null_rates="$null_rates $rate"
done
in_rate=$(echo "$in_rates" | median); col_rate=$(echo "$col_rates" | median)
out_rate=$(echo "$out_rates" | median); null_rate=$(echo "$null_rates" | median)
machine "input: $CLIENTS clients × $REQUESTS requests × $BATCH records; output: $EVENTS events; $ROUNDS rounds"
echo "| case | value |"
echo "|---|---|"
echo "| input: OTLP/HTTP protobuf logs → sluice → null (events/s, median) | $in_rate |"
echo "| input: the same load → the collector's OTLP receiver → nop (events/s, median) | $col_rate |"
echo "| input: sluice / collector | $(ratio "$in_rate" "$col_rate") |"
echo "| input: sluice's CPU per event (µs, user + system, median) | $(echo "$in_cpus" | median) |"
echo "| input: the collector's CPU per event (µs, median) | $(echo "$col_cpus" | median) |"
echo "| output: generator → opentelemetry → collector → nop (events/s, median) | $out_rate |"
echo "| output: generator → null, the baseline (events/s, median) | $null_rate |"
echo "| output: opentelemetry / null | $(ratio "$out_rate" "$null_rate") |"
echo "| output: the receiving collector's CPU per event (µs, median) | $(echo "$out_cpus" | median) |"
echo "(rounds: input$in_rates; collector$col_rates; output$out_rates; null$null_rates)"
