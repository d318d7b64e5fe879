#!/usr/bin/env bash
# What keeping the events' order costs (issue 45): one worker, `pipeline.ordered: auto` (the
# default, which orders when pipeline.workers: 1 is set, as Logstash does: each event through
# the filters alone) against `pipeline.ordered: false` (whole batches) in the same run, on the
# Apache lines through grok, date and a conditional mutate. Rounds interleaved; medians.
# Prints events/s of each and the ratio ordered / unordered.
# Usage: bench/ordered.sh [LINES] [DIR]   (ROUNDS=N in the environment, default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-200000}
DIR=${2:-target/bench-ordered}
ROUNDS=${ROUNDS:-5}
cargo build --release --quiet
apache_lines "$N" "$DIR"
BIN=$PWD/target/release/sluice
DIR=$(cd "$DIR" && pwd)
CONFIG='input { stdin {} }
  filter {
    grok { match => { "message" => "%{COMBINEDAPACHELOG}" } }
    date { match => [ "timestamp", "dd/MMM/yyyy:HH:mm:ss Z" ] }
    if [response] == "404" { mutate { add_tag => ["not_found"] } }
  }
  output { stdout { codec => dots } }'
for o in false auto; do
  mkdir -p "$DIR/$o"
  printf 'pipeline.ecs_compatibility: disabled\npipeline.ordered: %s\napi.enabled: false\n' "$o" > "$DIR/$o/sluice.yml"
done
machine "$N lines, 1 worker, $ROUNDS rounds"
un=() ord=()
for _ in $(seq "$ROUNDS"); do
  r=$(rate_and_cpu "$N" "$BIN" --log.level error --path.settings "$DIR/false" -w 1 -e "$CONFIG" < "$DIR/in.log")
  un+=("${r%% *}")
  r=$(rate_and_cpu "$N" "$BIN" --log.level error --path.settings "$DIR/auto" -w 1 -e "$CONFIG" < "$DIR/in.log")
  ord+=("${r%% *}")
done
u=$(echo "${un[*]}" | median) o=$(echo "${ord[*]}" | median)
echo "pipeline.ordered: false: $u events/s (rounds: ${un[*]})"
echo "pipeline.ordered: auto (ordered): $o events/s (rounds: ${ord[*]})"
echo "ordered / unordered: $(ratio "$o" "$u")"
