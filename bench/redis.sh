#!/usr/bin/env bash
# Redis input and output throughput against a local redis-server (started here on a free port,
# no persistence), as in the article "Just Enough Redis for Logstash":
#   - output: generator → redis list (RPUSH in batches), events/s;
#   - input: redis list → null, for threads 1/2/4/8 × batch_count 125/250, events/s;
#   - the ceiling of redis-server itself: redis-benchmark popping `LPOP key 125` from the same
#     list with 1, 2, 4 and 8 connections; our best input rate as a ratio to the highest of them
#     (the issue's goal: ≥ 0.8), and each row's ratio to the ceiling with as many connections
#     as it has threads.
# Events are ~200-byte JSON documents. Usage: bench/redis.sh [EVENTS] (default 1,000,000)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
for tool in redis-server redis-cli redis-benchmark; do
  command -v $tool >/dev/null || { echo "bench/redis.sh: $tool not found (apt-get install redis-server)" >&2; exit 1; }
done
cargo build --release --quiet
BIN=$PWD/target/release/sluice
TMP=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
  --dir "$TMP" --logfile "$TMP/redis.log" &
RPID=$!
trap 'kill $RPID 2>/dev/null; wait $RPID 2>/dev/null; rm -rf "$TMP"' EXIT
R() { redis-cli -p "$PORT" "$@"; }
until R ping >/dev/null 2>&1; do sleep 0.05; done

now() { date +%s.%N; }
rate() { awk -v n="$1" -v s="$2" -v e="$3" 'BEGIN { printf "%.0f", n / (e - s) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr); $(date -u +%Y-%m-%d)"
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'); events: $N"
echo

# Output: generator → redis list; each event's JSON is ~200 bytes.
MSG="GET /index.html HTTP/1.1 200 5120 x"  # kept twice (message, [event][original])
s=$(now)
$BIN --log.level error -w 2 -e "input { generator { count => $N message => \"$MSG\" } }
  output { redis { port => $PORT key => \"src\" data_type => \"list\" batch => true batch_events => 125 } }"
e=$(now)
got=$(R llen src)
[ "$got" -eq "$N" ] || { echo "expected $N events in the list, got $got" >&2; exit 1; }
OUT=$(rate "$N" "$s" "$e")
echo "output: generator → redis list (batch_events 125, 2 workers): $OUT events/s"
echo "  event size: $(R lindex src 0 | wc -c) bytes"
s=$(now)
$BIN --log.level error -w 2 -e "input { generator { count => $N message => \"$MSG\" } }
  output { redis { port => $PORT key => \"src1\" data_type => \"list\" } }"
e=$(now)
OUT1=$(rate "$N" "$s" "$e")
R del src1 >/dev/null
echo "output: generator → redis list (one RPUSH per event, pipelined per batch): $OUT1 events/s"
echo

# Ceiling: redis-benchmark popping 125 at a time from a copy of the same list.
ceiling() { # clients
  R copy src bench replace >/dev/null
  local req=$((N / 125))
  local rps
  rps=$(redis-benchmark -p "$PORT" -c "$1" -n "$req" --csv LPOP bench 125 | awk -F'"' 'NR == 2 { print $4 }')
  awk -v r="$rps" 'BEGIN { printf "%.0f", r * 125 }'
}
declare -A C
CEIL=0
for c in 1 2 4 8; do
  C[$c]=$(ceiling $c)
  echo "ceiling: redis-benchmark -c $c LPOP bench 125: ${C[$c]} events/s"
  if [ "${C[$c]}" -gt "$CEIL" ]; then CEIL=${C[$c]}; fi
done
echo

# Input: redis list → null; timed from start until the list is empty.
BEST=0
BEST_AT=""
printf "| threads | batch_count | events/s | ratio to the ceiling (%s) | ratio to redis-benchmark -c threads |\n|---|---|---|---|---|\n" "$CEIL" > "$TMP/table"
for t in 1 2 4 8; do
  for b in 125 250; do
    R copy src bench replace >/dev/null
    s=$(now)
    $BIN --log.level error -w 2 -e "input { redis { port => $PORT key => \"bench\" data_type => \"list\" threads => $t batch_count => $b } }
      output { null { } }" &
    SPID=$!
    while [ "$(R llen bench)" -ne 0 ]; do sleep 0.01; done
    e=$(now)
    kill -TERM $SPID; wait $SPID
    r=$(rate "$N" "$s" "$e")
    echo "input: redis → null, threads $t, batch_count $b: $r events/s ($(ratio "$r" "$CEIL") of the ceiling, $(ratio "$r" "${C[$t]}") of redis-benchmark -c $t)"
    echo "| $t | $b | $r | $(ratio "$r" "$CEIL") | $(ratio "$r" "${C[$t]}") |" >> "$TMP/table"
    if [ "$r" -gt "$BEST" ]; then BEST=$r; BEST_AT="threads $t, batch_count $b"; fi
  done
done
# Where the time goes: the same best setting with the plain codec (no JSON parsing).
R copy src bench replace >/dev/null
s=$(now)
$BIN --log.level error -w 2 -e "input { redis { port => $PORT key => \"bench\" data_type => \"list\" threads => 1 batch_count => 250 codec => plain } }
  output { null { } }" &
SPID=$!
while [ "$(R llen bench)" -ne 0 ]; do sleep 0.01; done
e=$(now)
kill -TERM $SPID; wait $SPID
PLAIN=$(rate "$N" "$s" "$e")
echo "input: redis → null, threads 1, batch_count 250, codec plain (no JSON parsing): $PLAIN events/s"
echo
echo "best input rate: $BEST events/s ($BEST_AT) = $(ratio "$BEST" "$CEIL") of redis-server's LPOP 125 ceiling (goal ≥ 0.8)"
echo "  = $(ratio "$BEST" "${C[1]}") of the one-connection figure (redis-benchmark -c 1), the one the issue quotes"
echo
cat "$TMP/table"
