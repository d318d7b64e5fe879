#!/usr/bin/env bash
# What `pipeline.batch.metrics.sampling_mode` costs: generator → null and the same with a
# mutate, run with the batch metrics `disabled` (the baseline, measured in the same run),
# `minimal` (the default: 2 batches in 100 measured) and `full` (every batch measured: each
# event's values walked for Logstash's byte estimate). Runs are interleaved so that all modes
# see the same machine load; each figure is the median of RUNS runs: events/s (wall clock)
# and CPU seconds (user + system) per million events, the steadier figure on a shared machine.
#
#   bench/batch_metrics.sh [EVENTS] [RUNS]     (defaults 2,000,000 and 5)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000000}
RUNS=${2:-5}
cargo build --release --quiet
BIN=target/release/sluice
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for mode in disabled minimal full; do
  mkdir -p "$TMP/$mode"
  printf 'pipeline.batch.metrics.sampling_mode: %s\npath.data: %s\n' "$mode" "$TMP/data" > "$TMP/$mode/sluice.yml"
done

source bench/lib.sh
machine
echo "events: $N, runs: $RUNS (interleaved); medians"
echo
echo "| pipeline | workers | disabled: events/s | minimal | full | disabled: CPU s / M events | minimal | full |"
echo "|---|---|---|---|---|---|---|---|"
for scenario in null mutate; do
  case $scenario in
    null) config="input { generator { count => $N } } output { null {} }"; label="generator → null" ;;
    mutate) config="input { generator { count => $N } } filter { mutate { add_field => { \"a\" => \"b\" } } } output { null {} }"; label="generator → mutate → null" ;;
  esac
  for w in 1 2; do
    declare -A RATE=() CPU=()
    for _ in $(seq "$RUNS"); do
      for mode in disabled minimal full; do
        r=$(rate_and_cpu "$N" "$BIN" --path.settings "$TMP/$mode" --log.level error -w "$w" -e "$config")
        read -r rate cpu <<<"$r"
        RATE[$mode]="${RATE[$mode]:-} $rate"
        CPU[$mode]="${CPU[$mode]:-} $cpu"
      done
    done
    rd=$(echo "${RATE[disabled]}" | median); rm=$(echo "${RATE[minimal]}" | median); rf=$(echo "${RATE[full]}" | median)
    cd_=$(echo "${CPU[disabled]}" | median); cm=$(echo "${CPU[minimal]}" | median); cf=$(echo "${CPU[full]}" | median)
    echo "| $label | $w | $rd | $rm ($(ratio "$rm" "$rd")) | $rf ($(ratio "$rf" "$rd")) | $cd_ | $cm ($(ratio "$cm" "$cd_")) | $cf ($(ratio "$cf" "$cd_")) |"
    unset RATE CPU
  done
done
