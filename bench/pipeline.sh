#!/usr/bin/env bash
# Foundation throughput: generator → null, and stdin → json_lines → file, with 1 and 2 workers.
# Prints events/s for each, and ratios to a baseline measured in the same run:
#   - generator → null: 2 workers vs 1 worker (scaling);
#   - stdin → file: vs `cat` copying the same input to a file (the I/O ceiling).
# Usage: bench/pipeline.sh [EVENTS]   (default 2,000,000)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-2000000}
cargo build --release --quiet
BIN=target/release/sluice
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

now() { date +%s.%N; }
rate() { awk -v n="$1" -v s="$2" -v e="$3" 'BEGIN { printf "%.0f", n / (e - s) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

machine
echo "events: $N"
echo

declare -A R
for w in 1 2; do
  s=$(now)
  $BIN --log.level error -w $w -e "input { generator { count => $N } } output { null {} }"
  e=$(now)
  R[gen$w]=$(rate "$N" "$s" "$e")
  echo "generator → null, $w worker(s): ${R[gen$w]} events/s"
done
echo "  scaling 2 workers / 1 worker: $(ratio "${R[gen2]}" "${R[gen1]}")"
echo

# Input: the example log, repeated to N lines.
awk -v n="$N" '{ line[NR] = $0 } END { for (i = 0; i < n; i++) print line[i % NR + 1] }' examples/sample.log > "$TMP/in.log"
s=$(now); cat "$TMP/in.log" > "$TMP/cat.out"; e=$(now)
R[cat]=$(rate "$N" "$s" "$e")
echo "baseline cat in.log > file: ${R[cat]} lines/s"
for w in 1 2; do
  rm -f "$TMP/out.log"
  s=$(now)
  $BIN --log.level error -w $w -e "input { stdin {} } output { file { path => \"$TMP/out.log\" codec => json_lines } }" < "$TMP/in.log"
  e=$(now)
  got=$(wc -l < "$TMP/out.log")
  [ "$got" -eq "$N" ] || { echo "expected $N lines, got $got" >&2; exit 1; }
  R[file$w]=$(rate "$N" "$s" "$e")
  echo "stdin → json_lines → file, $w worker(s): ${R[file$w]} events/s (ratio to cat: $(ratio "${R[file$w]}" "${R[cat]}"))"
done
