#!/usr/bin/env bash
# Redis input and output throughput against a local redis-server (started here on a free port,
# no persistence), as in the article "Just Enough Redis for Logstash":
#   - output: generator → redis list (RPUSH in batches), events/s;
#   - input: redis list → null, for threads 1/2/4 × batch_count 125/250, events/s, each next to
#     the baseline in the same run: bench/redis_consumer.rs, a minimal consumer with the same
#     client, threads, batches and JSON parser into sluice events, and no pipeline (goal ≥ 0.8:
#     the pipeline's own overhead at most 20%);
#   - 1, 2 and 3 sluice instances on one list at once: total events/s, and the CPU redis-server
#     and the whole machine used, to show which saturates;
#   - for reference, redis-benchmark's `LPOP key 125` with 1 and 8 connections (bytes only).
# Events are ~200-byte JSON documents. Usage: bench/redis.sh [EVENTS] (default 1,000,000)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-1000000}
for tool in redis-server redis-cli redis-benchmark; do
  command -v $tool >/dev/null || { echo "bench/redis.sh: $tool not found (apt-get install redis-server)" >&2; exit 1; }
done
cargo build --release --quiet
cargo build --release --quiet -p sluice-plugins --example redis_consumer
BIN=$PWD/target/release/sluice
CONSUMER=$PWD/target/release/examples/redis_consumer
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

machine "$(date -u +%Y-%m-%d)"
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

# For reference: redis-benchmark popping 125 at a time (reads reply bytes, decodes nothing).
ceiling() { # clients
  R copy src bench replace >/dev/null
  local req=$((N / 125))
  local rps
  rps=$(redis-benchmark -p "$PORT" -c "$1" -n "$req" --csv LPOP bench 125 | awk -F'"' 'NR == 2 { print $4 }')
  awk -v r="$rps" 'BEGIN { printf "%.0f", r * 125 }'
}
for c in 1 8; do
  echo "reference: redis-benchmark -c $c LPOP bench 125: $(ceiling $c) events/s (bytes only)"
done
echo

# Waits until the list `bench` is empty, with bash builtins only: LLEN over one connection held
# open, and a read that times out on a FIFO as the pause. (Polling with `redis-cli` and `sleep`
# started two processes every 10 ms, which took a fifth of a core from the run it measured.)
mkfifo "$TMP/idle"
exec 4<>"$TMP/idle"
wait_empty() {
  local line
  exec 3<>"/dev/tcp/127.0.0.1/$PORT"
  while :; do
    printf '*2\r\n$4\r\nLLEN\r\n$5\r\nbench\r\n' >&3
    read -r line <&3
    [ "${line%$'\r'}" = ":0" ] && break
    read -r -t 0.005 -u 4 || true
  done
  exec 3>&-
}

# CPU seconds (user + system) of a process, and of the whole machine (all cores, not idle).
cpu_of() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$1/stat"; }
busy() { awk -v t="$(getconf CLK_TCK)" '/^cpu / { printf "%.3f", ($2 + $3 + $4 + $7 + $8) / t }' /proc/stat; }

# Pops until the list is empty with INSTANCES sluice processes; prints events/s, redis-server's
# CPU share of one core, and the machine's busy share of all cores.
run_sluice() { # threads batch instances codec
  R copy src bench replace >/dev/null
  local pids=() s e rc0 rc1 b0 b1
  rc0=$(cpu_of $RPID); b0=$(busy); s=$(now)
  for _ in $(seq "$3"); do
    $BIN --log.level error -w 2 -e "input { redis { port => $PORT key => \"bench\" data_type => \"list\" threads => $1 batch_count => $2 codec => $4 } }
      output { null { } }" &
    pids+=($!)
  done
  wait_empty
  e=$(now); rc1=$(cpu_of $RPID); b1=$(busy)
  kill -TERM "${pids[@]}"; wait "${pids[@]}"
  awk -v n="$N" -v s="$s" -v e="$e" -v r0="$rc0" -v r1="$rc1" -v b0="$b0" -v b1="$b1" -v c="$(nproc)" \
    'BEGIN { d = e - s; printf "%.0f %.0f%% %.0f%%", n / d, 100 * (r1 - r0) / d, 100 * (b1 - b0) / d / c }'
}
run_consumer() { # threads batch; timed as sluice is, from the process start to its end
  R copy src bench replace >/dev/null
  local out s e
  s=$(now)
  out=$("$CONSUMER" "$PORT" bench "$1" "$2")
  e=$(now)
  [ "${out#* }" -eq "$N" ] || { echo "the consumer got ${out#* } events, expected $N" >&2; exit 1; }
  rate "$N" "$s" "$e"
}

# Input against the consumer, interleaved so that both see the same machine.
BEST=0; BEST_AT=""
printf "| threads | batch_count | consumer events/s | sluice events/s | ratio |\n|---|---|---|---|---|\n" > "$TMP/table"
for t in 1 2 4; do
  for b in 125 250; do
    c=$(run_consumer $t $b)
    read -r r _ _ <<<"$(run_sluice $t $b 1 json)"
    echo "input: threads $t, batch_count $b: consumer $c events/s, sluice redis → null $r events/s = $(ratio "$r" "$c") of the consumer"
    echo "| $t | $b | $c | $r | $(ratio "$r" "$c") |" >> "$TMP/table"
    if [ "$r" -gt "$BEST" ]; then BEST=$r; BEST_AT="$t $b $c"; fi
  done
done
read -r bt bb bc <<<"$BEST_AT"
echo
echo "best sluice input: $BEST events/s (threads $bt, batch_count $bb) = $(ratio "$BEST" "$bc") of the consumer with the same settings (goal ≥ 0.8)"
read -r PLAIN _ _ <<<"$(run_sluice "$bt" "$bb" 1 plain)"
echo "  the same with codec => plain (no JSON parsing): $PLAIN events/s"
echo

# Several instances on one list: each with the best setting.
printf "| instances | events/s (total) | redis-server CPU (of one core) | machine busy (of %s cores) |\n|---|---|---|---|\n" "$(nproc)" > "$TMP/scale"
for i in 1 2 3; do
  read -r r rcpu mbusy <<<"$(run_sluice "$bt" "$bb" $i json)"
  echo "instances: $i × (threads $bt, batch_count $bb): $r events/s; redis-server $rcpu of a core; machine $mbusy busy"
  echo "| $i | $r | $rcpu | $mbusy |" >> "$TMP/scale"
done
echo
cat "$TMP/table"
echo
cat "$TMP/scale"
