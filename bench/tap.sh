#!/usr/bin/env bash
# What a tap costs the pipeline it watches (issue 44). One sluice per round runs
# `generator (endless) → mutate → null` (2 workers, release build); after 2 s of warm-up its
# events out are counted over WINDOW seconds from /_node/stats, in four scenarios
# alternated round by round:
#   - none:     no tap attached (a tap point costs one atomic load per batch);
#   - stalled:  a client asks for every plugin's events (`plugin=main/*`) and never reads: its
#               channel fills and the rest is dropped for it;
#   - reading:  `sluice tap main/*` reading everything into /dev/null (the client takes a core
#               of its own: on 2 cores it competes with the workers);
#   - sampled:  `sluice tap main/* --rate 100`, as a person watching would.
# Prints the median events/s of each and its ratio to `none`.
# Usage: bench/tap.sh [ROUNDS] [WINDOW]   (default 5 rounds of 5 s)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ROUNDS=${1:-5}
WINDOW=${2:-5}
cargo build --release --quiet
BIN=target/release/sluice
TMP=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
out() { curl -sf "127.0.0.1:$1/_node/stats/events" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"]["out"])'; }

run() { # SCENARIO → events/s
  local api sp tp=""
  api=$(port)
  mkdir -p "$TMP/s"
  printf 'pipeline.workers: 2\napi.http.port: %s\npath.data: %s\n' "$api" "$TMP/data" > "$TMP/s/sluice.yml"
  "$BIN" --log.level error --path.settings "$TMP/s" -e '
    input { generator { count => 0 message => "127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /a.gif HTTP/1.0\" 200 2326" } }
    filter { mutate { id => "tagger" add_field => { "seen" => "%{message}" } } }
    output { null { id => "sink" } }' &
  sp=$!
  until curl -sf "127.0.0.1:$api/" >/dev/null; do sleep 0.05; done
  case $1 in
    stalled)
      python3 -c "
import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(('127.0.0.1', $api))
s.sendall(b'GET /_node/tap?plugin=main/* HTTP/1.1\r\nHost: x\r\n\r\n')
time.sleep(3600)" & tp=$! ;;
    reading)
      "$BIN" tap --api "http://127.0.0.1:$api" 'main/*' >/dev/null 2>&1 & tp=$! ;;
    sampled)
      "$BIN" tap --api "http://127.0.0.1:$api" 'main/*' --rate 100 >/dev/null 2>&1 & tp=$! ;;
  esac
  sleep 2
  local a b
  a=$(out "$api"); sleep "$WINDOW"; b=$(out "$api")
  [ -n "$tp" ] && kill "$tp" 2>/dev/null || true
  kill "$sp"; wait "$sp" 2>/dev/null || true
  [ -n "$tp" ] && { wait "$tp" 2>/dev/null || true; }
  rm -rf "$TMP/data"
  awk -v a="$a" -v b="$b" -v w="$WINDOW" 'BEGIN { printf "%.0f", (b - a) / w }'
}

declare -A R=()
for _ in $(seq "$ROUNDS"); do
  for s in none stalled reading sampled; do
    R[$s]="${R[$s]:-} $(run "$s")"
  done
done
machine "$(date -u +%Y-%m-%d)"
echo "rounds: $ROUNDS of ${WINDOW} s; generator → mutate → null, 2 workers"
printf '| tap | events/s (median) | ratio to none | rounds |\n|---|---|---|---|\n'
base=$(echo "${R[none]}" | median)
for s in none stalled reading sampled; do
  m=$(echo "${R[$s]}" | median)
  printf '| %s | %s | %s | %s |\n' "$s" "$m" "$(ratio "$m" "$base")" "$(echo ${R[$s]})"
done
