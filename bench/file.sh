#!/usr/bin/env bash
# The file input: read mode over one file of ~200-byte lines into `null` (events/s and MB/s,
# next to `wc -l` on the same file in the same run, page cache warm for both), and tail mode
# with a writer appending lines at full speed (events/s, and the lag: how long after the
# writer's last line sluice has counted every event, read from its monitoring API).
#
#   bench/file.sh [SIZE_MB] [TAIL_LINES]      (defaults 1024 and 2,000,000)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB=${1:-1024}
TAIL_LINES=${2:-2000000}
cargo build --release --quiet
BIN=target/release/sluice
TMP=$(mktemp -d)
trap 'pkill -f "$TMP" 2>/dev/null || true; rm -rf "$TMP"' EXIT
mkdir -p "$TMP/settings"
printf 'path.data: %s\napi.http.port: 9650\n' "$TMP/data" > "$TMP/settings/sluice.yml"

# ~200-byte lines, each different.
python3 - "$TMP/big.log" "$SIZE_MB" <<'PY'
import sys
path, mb = sys.argv[1], int(sys.argv[2])
pad = "x" * 150
with open(path, "w") as f:
    i, size, chunk = 0, 0, []
    while size < mb * 1024 * 1024:
        line = f"2026-11-24T10:00:00.000Z host-{i % 97} app[{i}]: request {i} {pad}\n"
        chunk.append(line); size += len(line); i += 1
        if len(chunk) == 10000:
            f.write("".join(chunk)); chunk = []
    f.write("".join(chunk))
PY
LINES=$(wc -l < "$TMP/big.log")
BYTES=$(stat -c %s "$TMP/big.log")
cat "$TMP/big.log" > /dev/null

echo "machine: $(nproc) cores, $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "read mode: $LINES lines, $((BYTES / 1024 / 1024)) MiB"
TIMEFORMAT='%R'
wc_s=$({ time wc -l "$TMP/big.log" > /dev/null; } 2>&1)
cfg="input { file { path => \"$TMP/big.log\" mode => read exit_after_read => true file_completed_action => log file_completed_log_path => \"$TMP/done.log\" sincedb_path => \"/dev/null\" } } output { null {} }"
s_s=$({ time "$BIN" --path.settings "$TMP/settings" --log.level error -e "$cfg" > /dev/null; } 2>&1)
awk -v l="$LINES" -v b="$BYTES" -v w="$wc_s" -v s="$s_s" 'BEGIN {
  printf "| read mode | %.0f lines/s | %.0f MB/s | wc -l: %.0f lines/s, %.0f MB/s | ratio to wc -l: %.3f |\n",
    l / s, b / s / 1e6, l / w, b / w / 1e6, w / s }'

# Tail mode: sluice tails an empty file; a writer appends TAIL_LINES lines at full speed.
: > "$TMP/tail.log"
cfg="input { file { path => \"$TMP/tail.log\" sincedb_path => \"/dev/null\" } } output { null {} }"
"$BIN" --path.settings "$TMP/settings" --log.level error -e "$cfg" > /dev/null 2>&1 &
PID=$!
out() { curl -s localhost:9650/_node/stats/pipelines | python3 -c 'import json,sys; print(json.load(sys.stdin)["pipelines"]["main"]["events"]["out"])' 2>/dev/null || echo 0; }
for _ in $(seq 100); do [ "$(out)" = 0 ] && curl -s localhost:9650/ > /dev/null && break; sleep 0.1; done
sleep 1
start=$(date +%s.%N)
head -n "$TAIL_LINES" "$TMP/big.log" >> "$TMP/tail.log"
written=$(date +%s.%N)
while [ "$(out)" -lt "$TAIL_LINES" ]; do sleep 0.01; done
done_at=$(date +%s.%N)
kill "$PID"; wait "$PID" 2>/dev/null || true
awk -v n="$TAIL_LINES" -v a="$start" -v w="$written" -v d="$done_at" 'BEGIN {
  printf "| tail mode | %d lines written at %.0f lines/s | all counted %.3f s after the last line | %.0f lines/s end to end |\n",
    n, n / (w - a), d - w, n / (d - a) }'
