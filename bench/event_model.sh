#!/usr/bin/env bash
# The event model's figures (issue 41), as same-run ratios of this checkout's build against a
# baseline build (BASE=path/to/sluice, e.g. a release build of the commit before the change),
# rounds alternated between the two, medians:
#   - apache: the seed's Apache pipeline (grok, date, geoip, useragent), memory queue, 2
#     workers: events/s and the largest RSS (/usr/bin/time);
#   - generator → null, memory queue, 2 workers: events/s;
#   - the CPU a persisted queue adds per event, on tmpfs (/dev/shm): the same pipeline with
#     queue.type persisted minus memory, user + system µs per event, for the generator's
#     event and for the Apache pipeline (over PQ_LINES lines, default 1,000,000: each run's
#     start-up CPU, GeoIP and grok's patterns, moves a shorter run's figure by ±0.3 µs);
#   - beats (uncompressed): Elastic's go-lumber client, 4 connections, window 2048, ~200-byte
#     events into `output { null {} }`, from the client's start until /_node/stats says every
#     event left; and sluice's CPU per event over that run (/proc, user + system), which the
#     client's share of the two cores does not blur.
# Usage: BASE=/path/to/old/sluice bench/event_model.sh [LINES] (ROUNDS=N, default 5; PQ_LINES;
# CASES=apache,generator,persisted,beats, default all; NEW=path for another build than
# target/release/sluice)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-200000}
ROUNDS=${ROUNDS:-5}
CASES=",${CASES:-apache,generator,persisted,beats},"
want() { [[ "$CASES" == *",$1,"* ]]; }
[ -x "${BASE:-}" ] || { echo "bench/event_model.sh: set BASE to the baseline's sluice binary" >&2; exit 1; }
DIR=$PWD/target/bench-event-model
apache_lines "$N" "$DIR"
PQ_N=${PQ_LINES:-1000000}
if want persisted; then apache_lines "$PQ_N" "$DIR/pq"; fi
NEW=${NEW:-$PWD/target/release/sluice}
tmpfs_dir event-model
SHM=${TMPFS_DIR:-$DIR/shm}
mkdir -p "$SHM"
for q in memory persisted; do
  mkdir -p "$DIR/$q-legacy" "$DIR/$q"
  printf 'pipeline.ecs_compatibility: disabled\nqueue.type: %s\nqueue.drain: true\npath.data: %s\n' "$q" "$SHM/data" > "$DIR/$q-legacy/sluice.yml"
  printf 'queue.type: %s\nqueue.drain: true\npath.data: %s\n' "$q" "$SHM/data" > "$DIR/$q/sluice.yml"
done
GEN_N=$((N * 10))
GEN="input { generator { count => $GEN_N } } output { null {} }"
declare -A R=()
add() { R[$1]="${R[$1]:-} $2"; }
med() { echo "${R[$1]:-}" | median; }
# one BIN LABEL: one round of every case for one binary.
one() {
  local bin=$1 l=$2 r rate cpu m p
  if want apache; then
    rm -rf "$SHM/data"
    r=$( { /usr/bin/time -f 'rss %M' "$bin" --log.level error --path.settings "$DIR/memory-legacy" -w 2 -e "$APACHE_SEED" < "$DIR/in.log" >/dev/null; } 2>&1 | grep '^rss' | cut -d' ' -f2)
    add "$l.rss" "$r"
    rm -rf "$SHM/data"
    read -r rate cpu <<<"$(rate_and_cpu "$N" "$bin" --log.level error --path.settings "$DIR/memory-legacy" -w 2 -e "$APACHE_SEED" < "$DIR/in.log")"
    add "$l.apache" "$rate"
  fi
  if want generator; then
    rm -rf "$SHM/data"
    read -r rate cpu <<<"$(rate_and_cpu "$GEN_N" "$bin" --log.level error --path.settings "$DIR/memory" -w 2 -e "$GEN")"
    add "$l.generator" "$rate"
  fi
  if want persisted; then
    for c in gen apache; do
      if [ $c = gen ]; then
        rm -rf "$SHM/data"; read -r _ m <<<"$(rate_and_cpu "$GEN_N" "$bin" --log.level error --path.settings "$DIR/memory" -w 2 -e "$GEN")"
        rm -rf "$SHM/data"; read -r _ p <<<"$(rate_and_cpu "$GEN_N" "$bin" --log.level error --path.settings "$DIR/persisted" -w 2 -e "$GEN")"
      else
        rm -rf "$SHM/data"; read -r _ m <<<"$(rate_and_cpu "$PQ_N" "$bin" --log.level error --path.settings "$DIR/memory-legacy" -w 2 -e "$APACHE_SEED" < "$DIR/pq/in.log")"
        rm -rf "$SHM/data"; read -r _ p <<<"$(rate_and_cpu "$PQ_N" "$bin" --log.level error --path.settings "$DIR/persisted-legacy" -w 2 -e "$APACHE_SEED" < "$DIR/pq/in.log")"
      fi
      add "$l.pq-$c" "$(awk -v a="$p" -v b="$m" 'BEGIN { printf "%.3f", a - b }')"
    done
  fi
  if want beats; then
    read -r rate cpu <<<"$(beats_rate "$bin")"
    add "$l.beats" "$rate"
    add "$l.beats-cpu" "$cpu"
  fi
  rm -rf "$SHM/data"
}

if want beats; then
  command -v go >/dev/null || { echo "bench/event_model.sh: go not found (beats case)" >&2; exit 1; }
  (cd tests/lumber && go build -o "$DIR/lumber-client" .)
fi
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# beats_rate BIN: events/s of BIN's beats input for 1,000,000 events.
beats_rate() {
  local bin=$1 api beats pid s e ticks n=1000000
  api=$(port); beats=$(port)
  mkdir -p "$DIR/beats"
  printf 'pipeline.workers: 2\napi.http.port: %s\npath.data: %s\n' "$api" "$SHM/data" > "$DIR/beats/sluice.yml"
  "$bin" --log.level error --path.settings "$DIR/beats" -e "input { beats { port => $beats host => \"127.0.0.1\" } } output { null {} }" >/dev/null 2>&1 &
  pid=$!
  until curl -sf "127.0.0.1:$api/" >/dev/null; do sleep 0.1; done
  s=$(date +%s.%N)
  "$DIR/lumber-client" -addr "127.0.0.1:$beats" -n $n -conns 4 -window 2048 -compress 0 -pad 110 -encoded >/dev/null
  until [ "$(curl -sf "127.0.0.1:$api/_node/stats/events" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"]["out"])' 2>/dev/null || echo 0)" -ge $n ]; do sleep 0.02; done
  e=$(date +%s.%N)
  ticks=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  awk -v n=$n -v s="$s" -v e="$e" -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.0f %.3f", n / (e - s), t / hz * 1e6 / n }'
}

machine "$N Apache lines ($PQ_N for the persisted queue's), $GEN_N generator events, $ROUNDS rounds alternated; base $BASE"
for _ in $(seq "$ROUNDS"); do
  one "$BASE" base
  one "$NEW" new
done
row() { # row NAME KEY UNIT
  local b n
  b=$(med "base.$2"); n=$(med "new.$2")
  echo "| $1 | $b | $n | $(ratio "$n" "$b") |"
}
echo "| case | base | this build | ratio |"
echo "|---|---|---|---|"
if want apache; then row "Apache pipeline, memory queue, 2 workers (events/s)" apache; row "its largest RSS (KiB)" rss; fi
if want generator; then row "generator → null, memory queue (events/s)" generator; fi
if want persisted; then row "CPU a persisted queue adds, generator's event (µs)" pq-gen; row "CPU a persisted queue adds, Apache event (µs)" pq-apache; fi
if want beats; then row "beats, uncompressed (events/s)" beats; row "beats: sluice's CPU per event (µs, user + system)" beats-cpu; fi
