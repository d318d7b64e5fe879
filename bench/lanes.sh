#!/usr/bin/env bash
# What output lanes cost and what they save (issue 40), in the same run, rounds interleaved,
# medians. The pipeline: the Apache lines (stdin) through grok and date, 2 workers, memory
# queue, two outputs: a file (on /dev/shm where it is a tmpfs) and an http output posting
# json_batch bodies to a Go server that answers 200 (bench/storebench httpsink).
#   1. every output healthy: events/s without lanes, and with the http output given a
#      persisted lane (nothing should touch the lane's disk while the output keeps up);
#   2. the http destination down (a closed port): the file output's rate with the lane,
#      against its rate with both up, each over the same window of the run (see file_rate;
#      without a lane the pipeline stalls at once: not run).
# Prints events/s and the ratios. Usage: bench/lanes.sh [LINES] (ROUNDS=N, default 5;
# SLUICE_BIN=path runs another build, e.g. an older commit's)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-300000}
ROUNDS=${ROUNDS:-5}
command -v go >/dev/null || { echo "bench/lanes.sh: go not found" >&2; exit 1; }
cargo build --release --quiet
BIN=${SLUICE_BIN:-$PWD/target/release/sluice}
DIR=$PWD/target/bench-lanes
apache_lines "$N" "$DIR"
tmpfs_dir lanes
OUT=${TMPFS_DIR:-$DIR/out}
mkdir -p "$OUT"
(cd bench/storebench && go build -o "$DIR/storebench" .)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
SINK=$(port)
DEAD=$(port)
"$DIR/storebench" httpsink "127.0.0.1:$SINK" & sink=$!
trap 'kill $sink 2>/dev/null || true; rm -rf "$TMPFS_DIR"' EXIT
sleep 0.3

config() { # config URL LANE
  cat <<EOF
input { stdin {} }
filter {
  grok { match => { "message" => "%{COMBINEDAPACHELOG}" } }
  date { match => [ "timestamp", "dd/MMM/yyyy:HH:mm:ss Z" ] }
}
output {
  file { path => "$OUT/out.log" }
  http { id => "web" url => "$1" http_method => "post" format => "json_batch" $2 }
}
EOF
}
LANE='lane => { type => persisted max_bytes => "4gb" }'
run() { # run URL LANE: events/s of one run with a fresh data dir
  rm -rf "$OUT/data" "$OUT/out.log"
  rate_and_cpu "$N" "$BIN" --log.level error --path.data "$OUT/data" -w 2 -e "$(config "$1" "$2")" < "$DIR/in.log" | cut -d' ' -f1
}
# file_rate URL: the file output's events/s while the http output (with a lane) sends to URL:
# over the window from a quarter of the file's final size ($SIZE, from a full run) to all of
# it, so that start-up and the outage's first moments (the workers wait SPILL_AFTER, 250 ms,
# for a full hand-off before they store) are left out. The file's size is polled (stat).
file_rate() {
  rm -rf "$OUT/data" "$OUT/out.log"
  local s="" e pid size
  "$BIN" --log.level error --path.data "$OUT/data" -w 2 -e "$(config "$1" "$LANE")" < "$DIR/in.log" >/dev/null 2>&1 &
  pid=$!
  while :; do
    size=$(stat -c %s "$OUT/out.log" 2>/dev/null || echo 0)
    if [ -z "$s" ] && [ "$size" -ge $((SIZE / 4)) ]; then s=$(date +%s.%N); fi
    [ "$size" -ge "$SIZE" ] && break
    sleep 0.005
  done
  e=$(date +%s.%N)
  kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  awk -v n="$N" -v s="$s" -v e="$e" 'BEGIN { printf "%.0f", 0.75 * n / (e - s) }'
}

machine "$N Apache lines, 2 workers, $ROUNDS rounds; outputs: file + http (json_batch)"
plain=() laned=() up=() down=()
run "http://127.0.0.1:$SINK/" "" >/dev/null
SIZE=$(stat -c %s "$OUT/out.log")
for _ in $(seq "$ROUNDS"); do
  plain+=("$(run "http://127.0.0.1:$SINK/" "")")
  laned+=("$(run "http://127.0.0.1:$SINK/" "$LANE")")
  up+=("$(file_rate "http://127.0.0.1:$SINK/")")
  down+=("$(file_rate "http://127.0.0.1:$DEAD/")")
done
p=$(echo "${plain[*]}" | median) l=$(echo "${laned[*]}" | median)
u=$(echo "${up[*]}" | median) d=$(echo "${down[*]}" | median)
echo "both outputs up, no lane: $p events/s (rounds: ${plain[*]})"
echo "both outputs up, http output with a persisted lane: $l events/s (rounds: ${laned[*]})"
echo "lane / no lane, healthy: $(ratio "$l" "$p")"
echo "the file output, both up (lane on the http output): $u events/s (rounds: ${up[*]})"
echo "the file output, http destination down: $d events/s (rounds: ${down[*]})"
echo "the file output's rate, one output down / both up: $(ratio "$d" "$u")"
