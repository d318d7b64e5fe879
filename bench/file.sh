#!/usr/bin/env bash
# The file input: read mode over one file of ~200-byte lines into `null` (events/s and MB/s,
# next to `wc -l` on the same file in the same run, page cache warm for both), and tail mode
# with a writer appending lines at full speed (events/s, and the lag: how long after the
# writer's last line sluice has counted every event, read from its monitoring API).
#
#   bench/file.sh [SIZE_MB] [TAIL_LINES] [RATE] [SECONDS]
#   (defaults 1024 MB, 2,000,000 lines, 200,000 lines/s for 10 s)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SIZE_MB=${1:-1024}
TAIL_LINES=${2:-2000000}
RATE=${3:-200000}
SECONDS_PACED=${4:-10}
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

machine
echo "read mode: $LINES lines, $((BYTES / 1024 / 1024)) MiB"
TIMEFORMAT='%R'
wc_s=$({ time wc -l "$TMP/big.log" > /dev/null; } 2>&1)
cfg="input { file { path => \"$TMP/big.log\" mode => read exit_after_read => true file_completed_action => log file_completed_log_path => \"$TMP/done.log\" sincedb_path => \"/dev/null\" } } output { null {} }"
s_s=$({ time "$BIN" --path.settings "$TMP/settings" --log.level error -e "$cfg" > /dev/null; } 2>&1)
awk -v l="$LINES" -v b="$BYTES" -v w="$wc_s" -v s="$s_s" 'BEGIN {
  printf "| read mode | %.0f lines/s | %.0f MB/s | wc -l: %.0f lines/s, %.0f MB/s | ratio to wc -l: %.3f |\n",
    l / s, b / s / 1e6, l / w, b / w / 1e6, w / s }'

# Tail mode: sluice tails an empty file while a writer appends lines, first at full speed
# (TAIL_LINES lines with `head`), then paced at RATE lines/s for SECONDS seconds. For the paced
# run the lag is sampled every 100 ms from the monitoring API: how long ago the writer wrote the
# line sluice has counted up to (max over the run), and after the last line, how long until
# every line is counted.
out() { curl -s localhost:9650/_node/stats/pipelines | python3 -c 'import json,sys; print(json.load(sys.stdin)["pipelines"]["main"]["events"]["out"])' 2>/dev/null || echo 0; }
start_tailing() {
  : > "$TMP/tail.log"
  cfg="input { file { path => \"$TMP/tail.log\" sincedb_path => \"/dev/null\" } } output { null {} }"
  "$BIN" --path.settings "$TMP/settings" --log.level error -e "$cfg" > /dev/null 2>&1 &
  PID=$!
  for _ in $(seq 100); do [ "$(out)" = 0 ] && curl -s localhost:9650/ > /dev/null && break; sleep 0.1; done
  sleep 1
}
stop_tailing() { kill "$PID"; wait "$PID" 2>/dev/null || true; }

start_tailing
start=$(date +%s.%N)
head -n "$TAIL_LINES" "$TMP/big.log" >> "$TMP/tail.log"
written=$(date +%s.%N)
while [ "$(out)" -lt "$TAIL_LINES" ]; do sleep 0.01; done
done_at=$(date +%s.%N)
stop_tailing
awk -v n="$TAIL_LINES" -v a="$start" -v w="$written" -v d="$done_at" 'BEGIN {
  printf "| tail, full speed | %d lines written at %.0f lines/s | all counted %.3f s after the last line | %.0f lines/s end to end |\n",
    n, n / (w - a), d - w, n / (d - a) }'

start_tailing
python3 - "$TMP/big.log" "$TMP/tail.log" "$RATE" "$SECONDS_PACED" <<'PY'
import json, sys, threading, time, urllib.request
src, dst, rate, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
with open(src) as f:
    block = [next(f) for _ in range(10000)]
total = int(rate * seconds)
def counted():
    with urllib.request.urlopen("http://localhost:9650/_node/stats/pipelines") as r:
        return json.load(r)["pipelines"]["main"]["events"]["out"]
start = time.monotonic()
state = {"written": 0, "done": False}
def writer():
    with open(dst, "a") as f:
        written = 0
        while written < total:
            due = min(total, int((time.monotonic() - start) * rate))
            while written < due:
                n = min(due - written, len(block) - written % len(block))
                f.write("".join(block[written % len(block):written % len(block) + n]))
                written += n
            f.flush()
            state["written"] = written
            time.sleep(0.005)
    state["done"] = time.monotonic()
t = threading.Thread(target=writer); t.start()
max_lag = 0.0
while True:
    time.sleep(0.1)
    c, now = counted(), time.monotonic()
    if c >= total:
        break
    # The line sluice counted up to was written (by the pacing) at start + c / rate.
    max_lag = max(max_lag, now - (start + c / rate))
    if now - start > seconds + 120:
        sys.exit(f"tail, paced: only {c} of {total} lines counted after {now - start:.0f} s")
t.join()
final = time.monotonic() - state["done"]
achieved = total / (state["done"] - start)
print(f"| tail, paced | {total} lines written at {achieved:.0f} lines/s for {seconds:.0f} s | max lag {max_lag:.2f} s | all counted {final:.2f} s after the last line |")
PY
stop_tailing
