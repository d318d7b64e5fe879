#!/usr/bin/env bash
# Network inputs into `output { null {} }`, 2 workers, ~200-byte events, each next to the same
# client sending to a sink that does no work (the ceiling of the client and the loopback on
# this machine), measured in the same run:
#   - beats: Elastic's go-lumber client (tests/lumber), 4 connections, window 2048, without and
#     with compression (zlib level 3, libbeat's default); -encoded gives go-lumber the events'
#     JSON ready-made, as libbeat's own encoder does, instead of encoding/json's reflection,
#     which took more CPU than sluice on this shared machine; the sink (bench/netbench lumbersink) reads the frames and ACKs each
#     window without inflating or parsing them.
#   - tcp: JSON lines from 4 connections (bench/netbench tcpsend), codec json_lines; the sink
#     only counts bytes.
#   - http: 4 clients posting NDJSON bodies of 125 events (bench/netbench httpsend); the sink
#     (httpsink) reads each body and answers 200.
#   - udp: one sender as fast as it can (bench/netbench udpsend), 8 MiB receive buffers; UDP
#     cannot push back, so each side reports what it received and at what rate (the kernel
#     drops the rest), and sluice's kernel_drops.
# Sluice's rate runs from the client's start until /_node/stats says every event left the
# pipeline. Usage: bench/inputs.sh [EVENTS] [INPUTS] (default 1,000,000 events and every input;
# INPUTS is a comma-separated subset of beats,tcp,http,udp)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-1000000}
ONLY=",${2:-beats,tcp,http,udp},"
want() { [[ "$ONLY" == *",$1,"* ]]; }
command -v go >/dev/null || { echo "bench/inputs.sh: go not found" >&2; exit 1; }
cargo build --release --quiet
TMP=$(mktemp -d)
(cd tests/lumber && go build -o "$TMP/lumber-client" .)
(cd bench/netbench && go build -o "$TMP/netbench" .)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
rate() { awk -v n="$1" -v s="$2" -v e="$3" 'BEGIN { printf "%.0f", n / (e - s) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

API=$(port); BEATS=$(port); TCP=$(port); HTTP=$(port); UDP=$(port); SINK=$(port)
mkdir -p "$TMP/settings"
printf 'pipeline.workers: 2\napi.http.port: %s\npath.data: %s\n' "$API" "$TMP/data" > "$TMP/settings/sluice.yml"
target/release/sluice --log.level warn --path.settings "$TMP/settings" -e "
  input {
    beats { port => $BEATS host => \"127.0.0.1\" }
    tcp { port => $TCP host => \"127.0.0.1\" codec => json_lines dns_reverse_lookup_enabled => false }
    http { port => $HTTP host => \"127.0.0.1\" }
    udp { port => $UDP host => \"127.0.0.1\" codec => json receive_buffer_bytes => 8388608 }
  }
  output { null {} }" &
pids+=($!)
out() { curl -sf "127.0.0.1:$API/_node/stats/events" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"]["out"])' 2>/dev/null || echo 0; }
until curl -sf "127.0.0.1:$API/" >/dev/null; do sleep 0.1; done

machine "$(date -u +%Y-%m-%d)"
echo "events: $N per run"

# sluice NAME COMMAND...: runs the client, waits until N more events are out; prints events/s.
sluice_run() {
  local before s e
  before=$(out)
  s=$(now)
  "$@" >/dev/null
  until [ "$(out)" -ge $((before + N)) ]; do sleep 0.02; done
  e=$(now)
  rate "$N" "$s" "$e"
}
# sink_run COMMAND...: the client against a sink; prints events/s.
sink_run() {
  local s e
  s=$(now)
  "$@" >/dev/null
  e=$(now)
  rate "$N" "$s" "$e"
}

if want beats; then
"$TMP/netbench" lumbersink "127.0.0.1:$SINK" & pids+=($!)
sleep 0.3
for z in 0 3; do
  args=(-n "$N" -conns 4 -window 2048 -compress "$z" -pad 110 -encoded)
  c=$(sink_run "$TMP/lumber-client" -addr "127.0.0.1:$SINK" "${args[@]}")
  s=$(sluice_run "$TMP/lumber-client" -addr "127.0.0.1:$BEATS" "${args[@]}")
  label="uncompressed"; [ "$z" = 0 ] || label="zlib level $z"
  echo "beats ($label): sluice $s events/s; ceiling (lumbersink) $c events/s; ratio $(ratio "$s" "$c")"
done
kill "${pids[-1]}"; unset 'pids[-1]'
fi

if want tcp; then
"$TMP/netbench" tcpsink "127.0.0.1:$SINK" & pids+=($!)
sleep 0.3
c=$(sink_run "$TMP/netbench" tcpsend "127.0.0.1:$SINK" "$N" 4)
s=$(sluice_run "$TMP/netbench" tcpsend "127.0.0.1:$TCP" "$N" 4)
echo "tcp (json_lines, 4 connections): sluice $s events/s; ceiling (byte-counting sink) $c events/s; ratio $(ratio "$s" "$c")"
kill "${pids[-1]}"; unset 'pids[-1]'
fi

if want http; then
"$TMP/netbench" httpsink "127.0.0.1:$SINK" & pids+=($!)
sleep 0.3
c=$(sink_run "$TMP/netbench" httpsend "http://127.0.0.1:$SINK/" "$N" 4 125)
s=$(sluice_run "$TMP/netbench" httpsend "http://127.0.0.1:$HTTP/" "$N" 4 125)
echo "http (NDJSON bodies of 125, 4 clients): sluice $s events/s; ceiling (httpsink) $c events/s; ratio $(ratio "$s" "$c")"
kill "${pids[-1]}"; unset 'pids[-1]'
fi

if want udp; then
"$TMP/netbench" udpsink "127.0.0.1:$SINK" > "$TMP/udpsink" & sink=$!
sleep 0.3
"$TMP/netbench" udpsend "127.0.0.1:$SINK" "$N" >/dev/null
wait "$sink"
read -r got secs < "$TMP/udpsink"
c=$(awk -v n="$got" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
stat() { curl -sf "127.0.0.1:$API/_node/stats/pipelines" | python3 -c "import json,sys; p=json.load(sys.stdin)['pipelines']['main']; print(p['events']['out'], [i for i in p['plugins']['inputs'] if i['name']=='udp'][0].get('kernel_drops',0))"; }
read -r before drops_before < <(stat)
s=$(now)
"$TMP/netbench" udpsend "127.0.0.1:$UDP" "$N" >/dev/null
last=$before; e=$(now)
while true; do
  sleep 1
  read -r out drops < <(stat)
  [ "$out" -eq "$last" ] && break
  last=$out; e=$(now)
done
delivered=$((out - before))
echo "udp (one sender, json): sluice $(rate "$delivered" "$s" "$e") events/s, $delivered of $N delivered, kernel_drops $((drops - drops_before)); ceiling (counting sink) $c datagrams/s, $got of $N received"
fi
