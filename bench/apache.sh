#!/usr/bin/env bash
# The seed pipeline of the Apache filter set (issue 4):
#   stdin → grok %{COMBINEDAPACHELOG} → date → geoip clientip → useragent agent → stdout dots
# on ../shared/data/apache_logs repeated to N lines (default 200,000), memory and persisted
# queue, 1 and 2 workers; then each filter alone on pre-parsed events, so the slowest is
# visible. Legacy field names (pipeline.ecs_compatibility: disabled), as in the seed config.
# Prints events/s and the ratio to the 100,000 events/s goal and to stdin → dots with no
# filter (the pipeline's own ceiling), measured in the same run, and the CPU per event each
# queue type costs (with both cores busy, what the persisted queue adds is throughput lost).
# The seed pipeline runs ROUNDS times (default 3) per setting, memory then persisted, and the
# medians are printed with each round's ratio (this VM's figures move ±10% hour to hour).
# Where /dev/shm is a tmpfs, each round also runs the persisted queue there: the same queue
# code (encode, write, read, checks, decode) without the device's I/O (syncs, writeback,
# interrupts), which tells the queue's own cost from what the disk's durability costs.
# Usage: bench/apache.sh [LINES] [DIR]   (ROUNDS=N in the environment)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-200000}
DIR=${2:-target/bench-apache}
ROUNDS=${ROUNDS:-3}
apache_lines "$N" "$DIR"
BIN=$PWD/target/release/sluice
DIR=$(cd "$DIR" && pwd)
machine "$N lines"

settings() { # dir queue-type [path.data, default dir/data]
  mkdir -p "$1"
  printf 'pipeline.ecs_compatibility: disabled\nqueue.type: %s\nqueue.drain: true\npath.data: %s\n' "$2" "${3:-$1/data}" > "$1/sluice.yml"
}
rate() { # input config settings workers → events/s
  local r
  r=$(rate_cpu "$@")
  echo "${r%% *}"
}
rate_cpu() { # input config settings workers → "events/s CPU-µs-per-event" (user + system)
  rate_and_cpu "$N" "$BIN" --log.level error --path.settings "$3" -w "$4" -e "$2" < "$1"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
adds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }  # CPU µs per event over $2's

SEED=$APACHE_SEED
NONE='input { stdin {} } output { stdout { codec => dots } }'

settings "$DIR/mem" memory
settings "$DIR/pq" persisted
tmpfs_dir apache
SHM=$TMPFS_DIR
[ -z "$SHM" ] || settings "$DIR/shm" persisted "$SHM/data"
ceiling=$(rate "$DIR/in.log" "$NONE" "$DIR/mem" 2)
echo "stdin → dots, no filter, 2 workers: $ceiling events/s (ceiling)"
for w in 1 2; do
  ms=() ps=() rs=() mc=() pc=() ts=() trs=() tc=()
  for _ in $(seq "$ROUNDS"); do
    r=$(rate_cpu "$DIR/in.log" "$SEED" "$DIR/mem" $w)
    read -r m c <<<"$r"
    mc+=("$c")
    rm -rf "$DIR/pq/data"
    r=$(rate_cpu "$DIR/in.log" "$SEED" "$DIR/pq" $w)
    read -r p c <<<"$r"
    pc+=("$c")
    ms+=("$m") ps+=("$p") rs+=("$(ratio "$p" "$m")")
    if [ -n "$SHM" ]; then
      rm -rf "$SHM"
      r=$(rate_cpu "$DIR/in.log" "$SEED" "$DIR/shm" $w)
      rm -rf "$SHM"
      read -r t c <<<"$r"
      tc+=("$c") ts+=("$t") trs+=("$(ratio "$t" "$m")")
    fi
  done
  m=$(echo "${ms[*]}" | median) p=$(echo "${ps[*]}" | median)
  echo "seed pipeline, $w worker(s), median of $ROUNDS: memory $m events/s ($(ratio "$m" 100000) of goal, $(ratio "$m" "$ceiling") of ceiling); persisted $p events/s ($(ratio "$p" "$m") of memory; per round: ${rs[*]})"
  if [ -n "$SHM" ]; then
    t=$(echo "${ts[*]}" | median)
    echo "  persisted on tmpfs (no device I/O): $t events/s ($(ratio "$t" "$m") of memory; per round: ${trs[*]})"
  fi
  # With every core busy, the CPU the persisted queue adds is throughput lost.
  m=$(echo "${mc[*]}" | median) p=$(echo "${pc[*]}" | median)
  line="  CPU per event (user + system, whole process, medians): memory $m µs, persisted $p µs, the queue adds $(adds "$p" "$m") µs"
  if [ -n "$SHM" ]; then
    t=$(echo "${tc[*]}" | median)
    line="$line; on tmpfs $t µs, adds $(adds "$t" "$m") µs"
  fi
  echo "$line"
done

# Each filter alone, on events already parsed by grok (read back with the json_lines codec).
"$BIN" --log.level error --path.settings "$DIR/mem" -w 2 -e 'input { stdin {} }
  filter { grok { match => { "message" => "%{COMBINEDAPACHELOG}" } } }
  output { stdout { codec => json_lines } }' < "$DIR/in.log" > "$DIR/parsed.json"
JSON_IN='input { stdin { codec => json_lines } }'
OUT='output { stdout { codec => dots } }'
base=$(rate "$DIR/parsed.json" "$JSON_IN $OUT" "$DIR/mem" 2)
echo "each filter alone, 2 workers (json_lines input, no filter: $base events/s):"
g=$(rate "$DIR/in.log" 'input { stdin {} } filter { grok { match => { "message" => "%{COMBINEDAPACHELOG}" } } } '"$OUT" "$DIR/mem" 2)
echo "  grok:      $g events/s (line input)"
for f in 'date { match => [ "timestamp", "dd/MMM/yyyy:HH:mm:ss Z" ] }' 'geoip { source => "clientip" }' 'useragent { source => "agent" }'; do
  r=$(rate "$DIR/parsed.json" "$JSON_IN filter { $f } $OUT" "$DIR/mem" 2)
  printf '  %-10s %s events/s\n' "${f%% *}:" "$r"
done
rm -rf "$DIR"
