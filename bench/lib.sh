# Helpers the benchmark scripts share: `source "$(dirname "$0")/lib.sh"`.

# The machine line every result table starts from; arguments, if any, follow after "; ".
machine() {
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)${*:+; $*}"
}

# The median of the numbers on stdin (space- or newline-separated).
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# a / b to three decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# tmpfs_dir NAME: where /dev/shm is a tmpfs, sets TMPFS_DIR to a fresh path there (removed
# when the script exits), for a persisted queue run without the device's I/O; else leaves it
# empty. Call it in the script itself, not in $(...), so that the clean-up holds.
TMPFS_DIR=""
tmpfs_dir() {
  if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
    TMPFS_DIR=/dev/shm/sluice-bench-$1-$$
    trap 'rm -rf "$TMPFS_DIR"' EXIT
  fi
}

# rate_and_cpu EVENTS COMMAND...: runs the command (its stdout discarded, its stderr shown if
# it fails, which fails the script) and prints "events/s CPU-seconds-per-million-events".
rate_and_cpu() {
  local n=$1 err t
  shift
  err=$(mktemp)
  local TIMEFORMAT='%R %U %S'
  if ! t=$({ time "$@" >/dev/null 2>"$err"; } 2>&1); then
    cat "$err" >&2
    rm -f "$err"
    return 1
  fi
  rm -f "$err"
  awk -v n="$n" -v t="$t" 'BEGIN { split(t, a, " "); printf "%.0f %.3f\n", n / a[1], (a[2] + a[3]) * 1e6 / n }'
}

# filter_rows EVENTS RUNS SETTINGS_DIR "NAME|MESSAGE|FILTER"...: `generator { message => MESSAGE }
# → FILTER → null` through $BIN for each scenario, RUNS rounds interleaved so that every
# scenario sees the same machine load. Prints one table row per scenario: its name, the median
# events/s, the ratio to the first scenario's (the baseline), the median CPU s per million
# events. MESSAGE holds no '|' nor single quote; FILTER may hold '|' (Ruby blocks do).
filter_rows() {
  local n=$1 runs=$2 settings=$3 i name rest message filter config r rate cpu base
  shift 3
  local -a scenarios=("$@")
  local -A RATE=() CPU=()
  for _ in $(seq "$runs"); do
    for i in "${!scenarios[@]}"; do
      # Split by hand: `read` would stop at the first line of a multi-line filter.
      rest=${scenarios[$i]#*|}
      message=${rest%%|*}
      filter=${rest#*|}
      config="input { generator { count => $n message => '$message' } } filter { $filter } output { null {} }"
      r=$(rate_and_cpu "$n" "$BIN" --path.settings "$settings" --log.level error -e "$config")
      read -r rate cpu <<<"$r"
      RATE[$i]="${RATE[$i]:-} $rate"
      CPU[$i]="${CPU[$i]:-} $cpu"
    done
  done
  base=$(echo "${RATE[0]}" | median)
  for i in "${!scenarios[@]}"; do
    name=${scenarios[$i]%%|*}
    rate=$(echo "${RATE[$i]}" | median)
    echo "| $name | $rate | $(ratio "$rate" "$base") | $(echo "${CPU[$i]}" | median) |"
  done
}

# The seed pipeline of the Apache filter set (issue 4), legacy field names.
APACHE_SEED='input { stdin {} }
filter {
  grok { match => { "message" => "%{COMBINEDAPACHELOG}" } }
  date { match => [ "timestamp", "dd/MMM/yyyy:HH:mm:ss Z" ] }
  geoip { source => "clientip" }
  useragent { source => "agent" }
}
output { stdout { codec => dots } }'

# apache_lines LINES DIR: writes ../shared/data/apache_logs (or $SLUICE_SHARED's) repeated to
# LINES lines into DIR/in.log, after fetching the GeoIP database the seed pipeline needs and
# building the release binary; exits with a message when the log is not there.
apache_lines() {
  local log="${SLUICE_SHARED:-../shared}/data/apache_logs"
  [ -f "$log" ] || { echo "$0: $log not found (set SLUICE_SHARED)" >&2; exit 1; }
  scripts/fetch-geoip >/dev/null
  cargo build --release --quiet
  mkdir -p "$2"
  awk -v n="$1" '{ line[NR] = $0 } END { for (i = 0; i < n; i++) print line[i % NR + 1] }' "$log" > "$2/in.log"
}
