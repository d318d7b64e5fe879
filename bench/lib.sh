# Helpers the benchmark scripts share: `source "$(dirname "$0")/lib.sh"`.

# The machine line every result table starts from.
machine() { echo "machine: $(nproc) cores, $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"; }

# The median of the numbers on stdin (space- or newline-separated).
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# a / b to three decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

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
