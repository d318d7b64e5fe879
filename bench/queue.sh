#!/usr/bin/env bash
# Persisted-queue benchmarks (issue: the persisted queue). Everything runs on one
# filesystem (DIR, default ./target/bench-queue) and is compared, in the same run, with the
# device's own sequential write ceiling (issue 19):
#   fio --rw=write --bs=1M --direct=1 --iodepth=16 --ioengine=libaio --size=2g
# and, as a second column, with
#   dd if=/dev/zero bs=1M count=2048 conv=fdatasync
# (dd writes to the page cache and syncs once at the end, so it is no ceiling: the queue
# overlaps its writes and syncs and can pass it). fio runs again after scenario 1, and the
# ratio is to the mean of its two runs: this VM's disk moves by a third within minutes, and the
# two figures show by how much it moved. A third column is what the same durability costs a
# plain writer: fio's buffered 128 KB writes with an fdatasync after every 1 MB, as often as
# the queue syncs 1 KB records at queue.checkpoint.writes 1024
#   fio --rw=write --bs=128k --fdatasync=8 --size=2g
# and the same durability with direct I/O (1 MB written past the page cache, each synced),
# which the queue cannot use (see below)
#   fio --rw=write --bs=1M --direct=1 --ioengine=psync --fdatasync=1 --size=2g
# It also prints what one fdatasync costs here in CPU and time (python3), the floor under the
# flusher's share, and what a wake-up across CPUs costs (each sync sleeps a few times).
# Scenarios:
#   1. write 1 KB and 200 B records, default settings, 1 and 4 writers: MB/s, events/s, ratio
#      to fio and to dd
#   2. queue.checkpoint.writes 1, 1/4/16 writers pushing batches of 125 × 1 KB: events/s
#   3. drain (read batches of 125 + ack), 1 KB: events/s
#   4. generator → null (2 workers), memory vs persisted queue (queue.drain: true), ROUNDS
#      alternations (default 5): median ratio, and the CPU per event the persisted queue adds
#      (user + system time of the whole process, medians); where /dev/shm is a tmpfs, also the
#      persisted queue there: the same queue code without the device's I/O
#   5. reopen time and RSS with a BACKLOG_GB backlog (default 5)
#   6. CPU per event by part, one thread (encode + write + read + decode + ack, against a
#      memory queue), with held events and with decoding, and the flusher's syncs apart; on
#      a tmpfs too, where there is one
# Usage: bench/queue.sh [DIR] [BACKLOG_GB]   (ROUNDS=N in the environment for scenario 4)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
DIR=${1:-target/bench-queue}
GB=${2:-5}
ROUNDS=${ROUNDS:-5}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
command -v fio >/dev/null || { apt-get install -y -qq fio >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq fio >/dev/null; }; }
cargo build --release --quiet --example queue_bench -p sluice-queue
cargo build --release --quiet
B=target/release/examples/queue_bench
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }  # two decimals here
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

machine "filesystem: $(df -T "$DIR" | awk 'NR==2 {print $2}') on $(df "$DIR" | awk 'NR==2 {print $1}')"
dd_out=$(dd if=/dev/zero of="$DIR/dd.bin" bs=1M count=2048 conv=fdatasync 2>&1 | tail -1)
rm -f "$DIR/dd.bin"
DD=$(echo "$dd_out" | awk '{ for (i = 1; i <= NF; i++) if ($(i+1) == "s,") secs = $i } END { printf "%.1f", 2147483648 / secs / 1048576 }')
echo "dd: $DD MB/s ($dd_out)"
fio_mbs() { # fio options... → MB/s written
  fio --name=ceiling --filename="$DIR/fio.bin" --size=2g --output-format=terse --terse-version=3 "$@" |
    awk -F';' '{ printf "%.1f", $48 / 1024 }'
  rm -f "$DIR/fio.bin"
}
FIO_BEFORE=$(fio_mbs --rw=write --bs=1M --direct=1 --iodepth=16 --ioengine=libaio)
echo "fio (direct, 1 MB writes, iodepth 16): $FIO_BEFORE MB/s"
FIO_SYNCED=$(fio_mbs --rw=write --bs=128k --fdatasync=8)
echo "fio (buffered 128 KB writes, fdatasync every 1 MB): $FIO_SYNCED MB/s"
# Direct I/O with the same durability: 1 MB written past the page cache, then synced. The
# queue cannot write this way: a push must be in the file when it returns (a killed process
# loses nothing), and a push is one batch (125 records, 16-128 KB); direct writes that small
# pay the device's latency each (the 32 KB figure).
FIO_DIRECT_SYNCED=$(fio_mbs --rw=write --bs=1M --direct=1 --ioengine=psync --fdatasync=1)
FIO_DIRECT_32K=$(fio_mbs --rw=write --bs=32k --direct=1 --ioengine=psync --size=512m)
echo "fio (direct 1 MB writes, each followed by fdatasync): $FIO_DIRECT_SYNCED MB/s; direct 32 KB writes, no sync: $FIO_DIRECT_32K MB/s"
# What one fdatasync costs on this machine, whoever calls it, in CPU and in time: writes over
# an existing file, each followed by a sync, 500 times per size (4 KB; 75 KB, about what the
# queue syncs at a time for 132-byte events; 300 KB, for Apache lines; 1 MB, for 1 KB records
# at queue.checkpoint.writes 1024); against the same writes without the syncs. The CPU is a
# floor under the queue's CPU per event (at checkpoint.writes 1024 the queue syncs once per 512
# to 1024 records), and the time bounds a writer that may not run 1024 records ahead of a sync.
python3 - "$DIR/fsync.bin" <<'PY'
import os, resource, sys, time
fn = sys.argv[1]
fd = os.open(fn, os.O_RDWR | os.O_CREAT, 0o644)
for off in range(0, 64 << 20, 1 << 20):
    os.pwrite(fd, b"\0" * (1 << 20), off)
os.fsync(fd)
n, parts = 500, []
for size, label in ((4096, "4 KB"), (75000, "75 KB"), (300000, "300 KB"), (1 << 20, "1 MB")):
    buf, cost = b"x" * size, {}
    for sync in (False, True):
        # Nothing left dirty from before: the first sync of the timed loop would write it.
        os.fdatasync(fd)
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
        for i in range(n):
            os.pwrite(fd, buf, (i * size) % (60 << 20))
            if sync:
                os.fdatasync(fd)
        r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
        cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
        cost[sync] = (cpu / n * 1e6, (t1 - t0) / n * 1e6)
    parts.append(f"{label} {cost[True][0] - cost[False][0]:.0f} µs CPU, {cost[True][1] - cost[False][1]:.0f} µs")
os.close(fd)
os.unlink(fn)
print("one fdatasync after writing over an existing file: " + "; ".join(parts))
PY
# What waking a thread asleep on another CPU costs here, against the same on one CPU: two
# processes passing a byte back and forth through pipes. Every sync puts the flusher to sleep
# (the writer's request, the writeback, the device's flush), so each sync pays this a few
# times, and so does every batch a worker waits for, with either queue.
python3 - <<'PY'
import os, resource, time
def pingpong(n, cpus):
    a, b = os.pipe(), os.pipe()
    r0, c0 = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {cpus[1]})
        for _ in range(n):
            os.read(a[0], 1)
            os.write(b[1], b"x")
        os._exit(0)
    os.sched_setaffinity(0, {cpus[0]})
    for _ in range(n):
        os.write(a[1], b"x")
        os.read(b[0], 1)
    os.waitpid(pid, 0)
    t1 = time.monotonic()
    r1, c1 = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    os.sched_setaffinity(0, allowed)
    for fd in a + b:
        os.close(fd)
    cpu = sum(getattr(y, f) - getattr(x, f)
              for x, y in ((r0, r1), (c0, c1)) for f in ("ru_utime", "ru_stime"))
    return f"{(t1 - t0) / n * 1e6:.1f} µs, {cpu / n * 1e6:.1f} µs of CPU"
allowed = sorted(os.sched_getaffinity(0))
if len(allowed) > 1:
    x, y = allowed[:2]
    print(f"a wake-up and back between two CPUs (pipe ping-pong): {pingpong(20000, (x, y))} per round trip; on one CPU: {pingpong(20000, (x, x))}")
PY
echo

echo "1. write, default settings (checkpoint.writes 1024), synced at the end"
lines=()
for size in 1024 200; do
  for w in 1 4; do
    lines+=("$size $w $($B --dir "$DIR/q" --scenario write --writers $w --size $size --mb 2048)")
  done
done
FIO_AFTER=$(fio_mbs --rw=write --bs=1M --direct=1 --iodepth=16 --ioengine=libaio)
FIO=$(awk -v a="$FIO_BEFORE" -v b="$FIO_AFTER" 'BEGIN { printf "%.1f", (a + b) / 2 }')
echo "   fio (direct) after these writes: $FIO_AFTER MB/s; ratios are to the mean, $FIO MB/s"
for l in "${lines[@]}"; do
  read -r size w line <<<"$l"
  mbs=$(echo "$line" | field mb_per_s)
  synced=""
  [ "$size" = 1024 ] && synced=", to fio synced as often $(ratio "$mbs" "$FIO_SYNCED") (direct: $(ratio "$mbs" "$FIO_DIRECT_SYNCED"))"
  echo "   $size B, $w writer(s): $(echo "$line" | field events_per_s) events/s, $mbs MB/s, ratio to fio $(ratio "$mbs" "$FIO")$synced, to dd $(ratio "$mbs" "$DD")"
done
echo "2. queue.checkpoint.writes 1 (every push durable before it returns), 1 KB, batches of 125"
for w in 1 4 16; do
  line=$($B --dir "$DIR/q" --scenario durable --checkpoint-writes 1 --writers $w --mb 512)
  echo "   $w writer(s): $(echo "$line" | field events_per_s) events/s"
done
echo "3. drain: read batches of 125 + ack, 1 KB"
line=$($B --dir "$DIR/q" --scenario drain --mb 1024)
echo "   $(echo "$line" | field events_per_s) events/s"

echo "4. generator → null, 2 workers, 2,000,000 events; $ROUNDS rounds (memory, then persisted), medians"
pq_settings() { # settings-dir path.data
  mkdir -p "$1"
  printf 'queue.type: persisted\nqueue.drain: true\npath.data: %s\n' "$2" > "$1/sluice.yml"
}
rm -rf "$DIR/e2e"
pq_settings "$DIR/e2e/settings" "$DIR/e2e/data"
cfg='input { generator { count => 2000000 } } output { null {} }'
t() { # command... → "events/s cpu-seconds"
  local TIMEFORMAT='%R %U %S' times
  times=$({ time "$@" >/dev/null; } 2>&1 | tail -1)
  echo "$times" | awk '{ printf "%.0f %.3f\n", 2000000 / $1, $2 + $3 }'
}
# Where /dev/shm is a tmpfs, each round also runs the persisted queue there: the same queue
# code without the device's I/O (syncs, writeback, interrupts).
tmpfs_dir queue
SHM=$TMPFS_DIR
[ -z "$SHM" ] || pq_settings "$DIR/e2e/shm" "$SHM/data"
mems=() mem_cpus=() pqs=() pq_cpus=() ratios=() shms=() shm_cpus=() shm_ratios=()
for _ in $(seq "$ROUNDS"); do
  read -r mem mem_cpu < <(t target/release/sluice --log.level error -w 2 -e "$cfg")
  rm -rf "$DIR/e2e/data"
  read -r pq pq_cpu < <(t target/release/sluice --log.level error -w 2 --path.settings "$DIR/e2e/settings" -e "$cfg")
  mems+=("$mem") mem_cpus+=("$mem_cpu") pqs+=("$pq") pq_cpus+=("$pq_cpu") ratios+=("$(ratio "$pq" "$mem")")
  if [ -n "$SHM" ]; then
    rm -rf "$SHM"
    read -r shm shm_cpu < <(t target/release/sluice --log.level error -w 2 --path.settings "$DIR/e2e/shm" -e "$cfg")
    rm -rf "$SHM"
    shms+=("$shm") shm_cpus+=("$shm_cpu") shm_ratios+=("$(ratio "$shm" "$mem")")
  fi
done
mem=$(echo "${mems[*]}" | median) pq=$(echo "${pqs[*]}" | median)
mem_cpu=$(echo "${mem_cpus[*]}" | median) pq_cpu=$(echo "${pq_cpus[*]}" | median)
echo "   memory: $mem events/s, persisted: $pq events/s (medians), ratio $(ratio "$pq" "$mem") (per round: ${ratios[*]})"
# CPU seconds over the 2,000,000 events, against the memory queue's → µs per event added.
adds() { awk -v a="$1" -v b="$mem_cpu" 'BEGIN { printf "%.2f", (a - b) / 2 }'; }
echo "   CPU the persisted queue adds, whole process: $(adds "$pq_cpu") µs per event ($pq_cpu s against $mem_cpu s, medians)"
if [ -n "$SHM" ]; then
  shm=$(echo "${shms[*]}" | median) shm_cpu=$(echo "${shm_cpus[*]}" | median)
  echo "   persisted on tmpfs (no device I/O): $shm events/s, ratio $(ratio "$shm" "$mem") (per round: ${shm_ratios[*]}); adds $(adds "$shm_cpu") µs per event ($shm_cpu s)"
fi

echo "5. reopen with a ${GB} GB backlog"
line=$($B --dir "$DIR/q" --scenario reopen --gb "$GB")
echo "   reopen $(echo "$line" | field reopen_seconds) s, RSS after reopen $(echo "$line" | field rss_mb) MB (growth $(echo "$line" | field rss_growth_mb) MB), first batch read: $(echo "$line" | field first_batch) events"
echo "6. CPU per event by part (crates/pipeline/examples/queue_cpu.rs: one thread pushes, reads, acks; the flusher apart)"
cargo build --release --quiet --example queue_cpu -p sluice-pipeline
target/release/examples/queue_cpu 2000000 "$DIR/cpu" | sed 's/^/   /'
if [ -n "$SHM" ]; then
  echo "   the same on tmpfs (no device I/O):"
  target/release/examples/queue_cpu 2000000 "$SHM/cpu" | sed 's/^/     /'
  rm -rf "$SHM"
fi
rm -rf "$DIR/q" "$DIR/e2e" "$DIR/cpu"
