#!/usr/bin/env bash
# One pipeline with 4 inputs vs 4 pipelines with 1 input each (issue: many pipelines).
# Persisted queue (queue.drain: true so every event is processed), 1 KB events, a light
# filter (mutate add_field), null output; queue.checkpoint.writes 1024 and 1.
# Prints events/s for both layouts and the ratio one/four (goal >= 0.9).
# Usage: bench/pipelines.sh [EVENTS_PER_INPUT] [DIR]   (defaults 100000, target/bench-pipelines)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-100000}
DIR=${2:-target/bench-pipelines}
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
cargo build --release --quiet
BIN=$PWD/target/release/sluice
MSG=$(head -c 1000 /dev/zero | tr '\0' 'x')
GEN="generator { count => $N message => \"$MSG\" }"
FILTER='filter { mutate { add_field => { "route" => "%{[host][name]}" } } }'
machine "$(( 4 * N )) events of 1 KB per run"

run() { # settings-dir
  local s e
  s=$(date +%s.%N); "$BIN" --log.level error --path.settings "$1"; e=$(date +%s.%N)
  awk -v n=$(( 4 * N )) -v s="$s" -v e="$e" 'BEGIN { printf "%.0f", n / (e - s) }'
}

for cw in 1024 1; do
  rm -rf "$DIR/one" "$DIR/four"; mkdir -p "$DIR/one" "$DIR/four"
  common="queue.type: persisted\nqueue.drain: true\nqueue.checkpoint.writes: $cw\npipeline.workers: 2\n"
  printf "$common""path.data: $DIR/one/data\n" > "$DIR/one/sluice.yml"
  printf "$common""path.data: $DIR/four/data\n" > "$DIR/four/sluice.yml"
  {
    echo "- pipeline.id: one"
    echo "  config.string: 'input { $GEN $GEN $GEN $GEN } $FILTER output { null {} }'"
  } > "$DIR/one/pipelines.yml"
  : > "$DIR/four/pipelines.yml"
  for i in 1 2 3 4; do
    {
      echo "- pipeline.id: p$i"
      echo "  config.string: 'input { $GEN } $FILTER output { null {} }'"
    } >> "$DIR/four/pipelines.yml"
  done
  one=$(run "$DIR/one"); four=$(run "$DIR/four")
  echo "checkpoint.writes $cw: one pipeline × 4 inputs: $one events/s; 4 pipelines × 1 input: $four events/s; ratio one/four $(awk -v a="$one" -v b="$four" 'BEGIN { printf "%.2f", a / b }')"
done
rm -rf "$DIR"
