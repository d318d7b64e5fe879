#!/usr/bin/env bash
# What counting for the monitoring API costs: generator → null (bench/pipeline.sh's first
# scenario), and generator → mutate → null (one timed filter), with a binary built before the
# per-worker counters and with the current tree. Runs are interleaved so that all variants see
# the same machine load; each figure is the median of RUNS runs: events/s (wall clock) and CPU
# seconds (user + system) per million events, the steadier figure on a shared machine.
#
#   bench/metrics.sh BASELINE_BINARY [EVENTS] [RUNS]     (defaults 2,000,000 and 5)
#
# Build the baseline from the commit before the monitoring work, away from target/:
#   git worktree add --detach /tmp/sluice-base a1f753f~1
#   (cd /tmp/sluice-base && CARGO_TARGET_DIR=/tmp/sluice-base-target cargo build --release --bin sluice)
#   bench/metrics.sh /tmp/sluice-base-target/release/sluice
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:?usage: bench/metrics.sh BASELINE_BINARY [EVENTS] [RUNS]}
N=${2:-2000000}
RUNS=${3:-5}
cargo build --release --quiet
AFTER=$(mktemp)
cp target/release/sluice "$AFTER"
chmod +x "$AFTER"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP" "$AFTER"' EXIT
# The current binary with the API switched off, to tell the counters' cost from the API's.
mkdir -p "$TMP/off"
printf 'api.enabled: false\npath.data: %s\n' "$TMP/data" > "$TMP/off/sluice.yml"

source bench/lib.sh
machine
echo "events: $N, runs: $RUNS (interleaved); medians"
echo
echo "| pipeline | workers | before: events/s | after | after, api.enabled: false | before: CPU s / M events | after | after, API off |"
echo "|---|---|---|---|---|---|---|---|"
for scenario in null mutate; do
  case $scenario in
    null) config="input { generator { count => $N } } output { null {} }"; label="generator → null" ;;
    mutate) config="input { generator { count => $N } } filter { mutate { add_field => { \"a\" => \"b\" } } } output { null {} }"; label="generator → mutate → null" ;;
  esac
  for w in 1 2; do
    declare -A RATE=() CPU=()
    for _ in $(seq "$RUNS"); do
      for variant in before after off; do
        case $variant in
          before) cmd=("$BASE") ;;
          after) cmd=("$AFTER") ;;
          off) cmd=("$AFTER" --path.settings "$TMP/off") ;;
        esac
        r=$(rate_and_cpu "$N" "${cmd[@]}" --log.level error -w "$w" -e "$config")
        read -r rate cpu <<<"$r"
        RATE[$variant]="${RATE[$variant]:-} $rate"
        CPU[$variant]="${CPU[$variant]:-} $cpu"
      done
    done
    rb=$(echo "${RATE[before]}" | median); ra=$(echo "${RATE[after]}" | median); ro=$(echo "${RATE[off]}" | median)
    cb=$(echo "${CPU[before]}" | median); ca=$(echo "${CPU[after]}" | median); co=$(echo "${CPU[off]}" | median)
    echo "| $label | $w | $rb | $ra ($(ratio "$ra" "$rb")) | $ro ($(ratio "$ro" "$rb")) | $cb | $ca ($(ratio "$ca" "$cb")) | $co ($(ratio "$co" "$cb")) |"
    unset RATE CPU
  done
done
