#!/usr/bin/env bash
# queue.compression (issue 19) on the Apache events: for each setting (none, speed, balanced,
# size), the seed pipeline's events/s with the persisted queue, and the bytes the queue wrote
# per event, next to the memory queue and to `none` in the same run.
#   - events/s: stdin → grok → date → geoip → useragent → dots (as bench/apache.sh), 2 workers,
#     queue.drain: true;
#   - bytes: stdin (held open through a FIFO) → null, so that the process is still there once
#     every event is out; then the process's `wchar` (/proc/PID/io: bytes it passed to write
#     calls: page records and checkpoints, plus the few KB of the stats polls that find the
#     moment). The queue holds what inputs make, before any filter: here the raw log line.
# Usage: bench/queue_compression.sh [LINES] [DIR] (defaults 200,000 and target/bench-compression)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-200000}
DIR=${2:-target/bench-compression}
apache_lines "$N" "$DIR"
BIN=$PWD/target/release/sluice
DIR=$(cd "$DIR" && pwd)
machine "$(date -u +%Y-%m-%d); $N lines of ../shared/data/apache_logs ($(wc -c < "$DIR/in.log") bytes)"

settings() { # dir queue-type compression
  rm -rf "$1"; mkdir -p "$1"
  local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  printf 'pipeline.ecs_compatibility: disabled\nqueue.type: %s\nqueue.compression: %s\nqueue.drain: true\npath.data: %s\napi.http.port: %s\n' \
    "$2" "$3" "$1/data" "$port" > "$1/sluice.yml"
  echo "$port" > "$1/port"
}
rate() { # config settings-dir → events/s
  local s e
  s=$(date +%s.%N)
  "$BIN" --log.level error --path.settings "$2" -w 2 -e "$1" < "$DIR/in.log" > /dev/null
  e=$(date +%s.%N)
  awk -v n="$N" -v s="$s" -v e="$e" 'BEGIN { printf "%.0f", n / (e - s) }'
}
written() { # settings-dir → bytes written by the process once every event is out
  local fifo="$DIR/fifo" port pid out=0
  port=$(cat "$1/port")
  rm -f "$fifo"; mkfifo "$fifo"
  "$BIN" --log.level error --path.settings "$1" -w 2 -e 'input { stdin {} } output { null {} }' < "$fifo" > /dev/null &
  pid=$!
  exec 3> "$fifo"
  cat "$DIR/in.log" >&3
  while [ "${out:-0}" -lt "$N" ]; do
    sleep 0.1
    out=$(curl -s "127.0.0.1:$port/_node/stats/events" 2>/dev/null | sed -n 's/.*"out":\([0-9]*\).*/\1/p') || true
  done
  awk '/^wchar/ { print $2 }' "/proc/$pid/io"
  exec 3>&-
  wait "$pid"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

SEED=$APACHE_SEED

settings "$DIR/mem" memory none
rate "$SEED" "$DIR/mem" > /dev/null # warm-up: the GeoIP database and the binary into the page cache
mem=$(rate "$SEED" "$DIR/mem")
echo
echo "| queue.compression | seed pipeline events/s | of memory ($mem) | queue bytes written per event | of none |"
echo "|---|---|---|---|---|"
for c in none speed balanced size; do
  settings "$DIR/$c" persisted "$c"
  r=$(rate "$SEED" "$DIR/$c")
  settings "$DIR/$c" persisted "$c"
  b=$(written "$DIR/$c")
  per=$(awk -v b="$b" -v n="$N" 'BEGIN { printf "%.1f", b / n }')
  [ "$c" = none ] && base=$per
  echo "| $c | $r | $(ratio "$r" "$mem") | $per | $(ratio "$per" "$base") |"
done
rm -rf "$DIR"
