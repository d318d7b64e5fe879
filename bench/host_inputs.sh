#!/usr/bin/env bash
# The inputs of issue 43 against their real peers, each into `output { null {} }` in one sluice
# (2 workers), each peer's own send rate measured in the same run:
#   - gelf over UDP and TCP: graypy (scripts/python-peers) logging N records as fast as it can;
#     its rate is N over its own run. Sluice's rate runs from the sender's start until the
#     stats stop growing (UDP may drop: what arrived is said).
#   - unix: a Python client writing N lines to the socket as fast as it can.
#   - relp: the feeder writes N syslog lines into rsyslog (imtcp) as fast as rsyslog takes
#     them; rsyslog forwards them with omrelp. The peer's rate is the feeder's; sluice's runs
#     until every event left.
#   - netflow (the codec on udp): softflowd exporting NetFlow v9 from a capture of N/4 flows
#     (tests/netflow/mkpcap.py); its rate is flows over its own run (reading the capture and
#     sending), sluice's until the stats stop growing.
#   - snmptrap: net-snmp's snmptrap sending N/200 v2c traps, one process each (as a script
#     that calls it per alert does); its rate is traps over the whole loop. Again as SNMPv3
#     authPriv (SHA, AES) into a second snmptrap input with that user.
#   - snmp: net-snmp's snmpd on a port of the script's own; the snmp input walks mib-2 once
#     (GETBULK of 10), against net-snmp's own snmpbulkwalk of the same subtree: values per
#     second, each from its start to its last value (sluice's includes starting the process).
#     Again as SNMPv3 authPriv (SHA-256, AES-256): a USM user of snmpd's, both sides
#     discovering the engine first.
#   - pipe: `seq N` as the command; its rate is `seq N > /dev/null` timed alone.
#   - logstash: a second sluice (generator → logstash output, plain HTTP) sending N events;
#     its rate alone into a `null`-like receiver is not separable, so the row gives the pair.
# heartbeat and exec make one event per schedule tick: no throughput figure.
# Usage: bench/host_inputs.sh [EVENTS] (default 200,000)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-200000}
cargo build --release --quiet
PY=$(scripts/python-peers | sed 's/^SLUICE_PEERS_PYTHON=//')
TMP=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
rate() { awk -v n="$1" -v s="$2" -v e="$3" 'BEGIN { printf "%.0f", n / (e - s) }'; }

API=$(port); GELF=$(port); GELFT=$(port); RELP=$(port); LS=$(port); NF=$(port); SNMP=$(port); SNMP3=$(port)
SOCK=$TMP/in.sock
mkdir -p "$TMP/settings"
printf 'pipeline.workers: 2\napi.http.port: %s\npath.data: %s\n' "$API" "$TMP/data" > "$TMP/settings/sluice.yml"
target/release/sluice --log.level warn --path.settings "$TMP/settings" -e "
  input {
    gelf { host => \"127.0.0.1\" port_udp => $GELF port_tcp => $GELFT use_tcp => true }
    unix { path => \"$SOCK\" }
    relp { host => \"127.0.0.1\" port => $RELP }
    logstash { host => \"127.0.0.1\" port => $LS ssl_enabled => false }
    udp { host => \"127.0.0.1\" port => $NF codec => netflow {} receive_buffer_bytes => 8388608 }
    snmptrap { host => \"127.0.0.1\" port => $SNMP }
    snmptrap { host => \"127.0.0.1\" port => $SNMP3 supported_versions => [\"3\"] security_name => \"bench\"
               auth_protocol => \"sha\" auth_pass => \"authpass123\" priv_protocol => \"aes\"
               priv_pass => \"privpass123\" security_level => \"authPriv\" }
  }
  output { null {} }" &
pids+=($!)
out() { curl -sf "127.0.0.1:$API/_node/stats/events" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"]["out"])' 2>/dev/null || echo 0; }
until curl -sf "127.0.0.1:$API/" >/dev/null; do sleep 0.1; done

machine "$(date -u +%Y-%m-%d)"
echo "events: $N per run"
printf '| input | peer | peer events/s | sluice events/s | sluice / peer | arrived |\n|---|---|---|---|---|---|\n'

# settle BEFORE START: waits until events out stop growing (0.5 s without change) or reach
# BEFORE + N; prints "count end-time" for the last change.
settle() {
  local before=$1 last=-1 last_t n t
  last_t=$(now)
  while :; do
    n=$(( $(out) - before ))
    t=$(now)
    if [ "$n" -ne "$last" ]; then last=$n; last_t=$t; fi
    if [ "$n" -ge "$N" ]; then break; fi
    if awk -v a="$t" -v b="$last_t" 'BEGIN { exit !(a - b > 0.5) }'; then break; fi
    sleep 0.02
  done
  echo "$last $last_t"
}

row() { # NAME PEER PEER_RATE START
  local got end r
  read -r got end < <(settle "$BEFORE")
  r=$(rate "$got" "$4" "$end")
  printf '| %s | %s | %s | %s | %s | %s of %s |\n' "$1" "$2" "$3" "$r" "$(ratio "$r" "$3")" "$got" "$N"
}

cat > "$TMP/gelf.py" <<'EOF'
import logging, sys, time, graypy
proto, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
h = graypy.GELFUDPHandler("127.0.0.1", port) if proto == "udp" else graypy.GELFTCPHandler("127.0.0.1", port)
log = logging.getLogger("bench"); log.propagate = False; log.addHandler(h); log.setLevel(logging.INFO)
t = time.time()
for i in range(n):
    log.info("GET /index.html 200 %d", i, extra={"status": 200, "bytes": i})
h.close()
print(n / (time.time() - t))
EOF
for proto in udp tcp; do
  p=$GELF; [ "$proto" = tcp ] && p=$GELFT
  BEFORE=$(out); START=$(now)
  PEER=$("$PY" "$TMP/gelf.py" "$proto" "$p" "$N")
  row "gelf ($proto)" "graypy 2.1.0" "$(printf '%.0f' "$PEER")" "$START"
done

cat > "$TMP/unix.py" <<'EOF'
import socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_UNIX); s.connect(path)
line = b'{"message":"GET /index.html 200 5120","status":200}\n'
t = time.time()
for i in range(0, n, 1000):
    s.sendall(line * min(1000, n - i))
s.close()
print(n / (time.time() - t))
EOF
BEFORE=$(out); START=$(now)
PEER=$(python3 "$TMP/unix.py" "$SOCK" "$N")
row "unix" "python socket client" "$(printf '%.0f' "$PEER")" "$START"

if command -v rsyslogd >/dev/null; then
  RS=$(port)
  mkdir -p "$TMP/rsyslog"
  cat > "$TMP/rsyslog/rsyslog.conf" <<EOF
global(workDirectory="$TMP/rsyslog")
module(load="imtcp")
module(load="omrelp")
input(type="imtcp" address="127.0.0.1" port="$RS")
action(type="omrelp" target="127.0.0.1" port="$RELP" windowSize="1024" queue.type="LinkedList" queue.size="1000000" queue.dequeueBatchSize="1024")
EOF
  rsyslogd -n -f "$TMP/rsyslog/rsyslog.conf" -i "$TMP/rsyslog/pid" & pids+=($!)
  until (exec 3<>"/dev/tcp/127.0.0.1/$RS") 2>/dev/null; do sleep 0.1; done
  cat > "$TMP/feed.py" <<'EOF'
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
t = time.time()
for i in range(0, n, 1000):
    s.sendall(b"".join(b"<13>Nov 28 10:00:00 web1 shop: order %d shipped\n" % j for j in range(i, min(n, i + 1000))))
s.close()
print(n / (time.time() - t))
EOF
  BEFORE=$(out); START=$(now)
  PEER=$(python3 "$TMP/feed.py" "$RS" "$N")
  row "relp" "rsyslog $(rsyslogd -v | head -1 | awk '{print $2}' | tr -d ,) omrelp (feeder's rate)" "$(printf '%.0f' "$PEER")" "$START"
else
  echo "| relp | rsyslog not installed | | | | |"
fi

if command -v softflowd >/dev/null || [ -x /usr/sbin/softflowd ]; then
  FLOWS=$((N / 4))
  python3 tests/netflow/mkpcap.py "$TMP/flows.pcap" "$FLOWS" 2
  SAVED_N=$N; N=$FLOWS
  BEFORE=$(out); START=$(now)
  /usr/sbin/softflowd -r "$TMP/flows.pcap" -n "127.0.0.1:$NF" -v 9 -d >/dev/null
  PEER=$(rate "$FLOWS" "$START" "$(now)")
  row "netflow (udp, v9)" "softflowd $(dpkg-query -W -f='${Version}' softflowd 2>/dev/null || true)" "$PEER" "$START"
  N=$SAVED_N
else
  echo "| netflow | softflowd not installed | | | | |"
fi

if command -v snmptrap >/dev/null; then
  TRAPS=$((N / 200))
  SAVED_N=$N; N=$TRAPS
  BEFORE=$(out); START=$(now)
  for i in $(seq "$TRAPS"); do
    MIBS= snmptrap -v 2c -c public "127.0.0.1:$SNMP" "$i" 1.3.6.1.6.3.1.1.5.3 1.3.6.1.2.1.2.2.1.1.2 i "$i"
  done
  PEER=$(rate "$TRAPS" "$START" "$(now)")
  row "snmptrap (v2c)" "net-snmp snmptrap $(snmptrap --version 2>&1 | awk '{print $NF}'), a process a trap" "$PEER" "$START"
  BEFORE=$(out); START=$(now)
  for i in $(seq "$TRAPS"); do
    MIBS= snmptrap -v 3 -e 0x8000000001020304 -u bench -l authPriv -a SHA -A authpass123 -x AES -X privpass123 \
      "127.0.0.1:$SNMP3" "$i" 1.3.6.1.6.3.1.1.5.3 1.3.6.1.2.1.2.2.1.1.2 i "$i"
  done
  PEER=$(rate "$TRAPS" "$START" "$(now)")
  row "snmptrap (v3 authPriv, SHA/AES)" "net-snmp snmptrap, a process a trap" "$PEER" "$START"
  N=$SAVED_N
else
  echo "| snmptrap | net-snmp's snmptrap not installed | | | | |"
fi

if [ -x /usr/sbin/snmpd ] && command -v snmpbulkwalk >/dev/null; then
  AG=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  printf 'agentAddress udp:127.0.0.1:%s\nrocommunity public 127.0.0.1\nexactEngineID 0x80001f8804736c756963652d62656e6368\ncreateUser bench SHA-256 "authpass123" AES-256 "privpass123"\nrouser bench authPriv\n' "$AG" > "$TMP/snmpd.conf"
  mkdir -p "$TMP/snmpd-state"
  SNMP_PERSISTENT_DIR="$TMP/snmpd-state" /usr/sbin/snmpd -f -Lo -C -c "$TMP/snmpd.conf" -p "$TMP/snmpd.pid" >/dev/null 2>&1 & pids+=($!)
  until MIBS= snmpget -v2c -c public -t 1 -r 0 "127.0.0.1:$AG" 1.3.6.1.2.1.1.5.0 >/dev/null 2>&1; do sleep 0.1; done
  mkdir -p "$TMP/snmp-settings"
  printf 'api.enabled: false\npath.data: %s\n' "$TMP/snmp-data" > "$TMP/snmp-settings/sluice.yml"
  V3='-v3 -u bench -l authPriv -a SHA-256 -A authpass123 -x AES-256 -X privpass123'
  V3LS="security_name => 'bench' auth_protocol => 'sha2' auth_pass => 'authpass123' priv_protocol => 'aes256' priv_pass => 'privpass123' security_level => 'authPriv'"
  for variant in v2c v3; do
    if [ "$variant" = v2c ]; then ARGS='-v2c -c public'; HOST="{host => 'udp:127.0.0.1/$AG'}"; USER=''
    else ARGS=$V3; HOST="{host => 'udp:127.0.0.1/$AG' version => '3'}"; USER=$V3LS; fi
    # shellcheck disable=SC2086
    S=$(now); VALUES=$(MIBS= snmpbulkwalk $ARGS -Cr10 "127.0.0.1:$AG" 1.3.6.1.2.1 | wc -l); E=$(now)
    PEER=$(rate "$VALUES" "$S" "$E")
    rm -f "$TMP/snmp.json"
    S=$(now)
    target/release/sluice --log.level warn --path.settings "$TMP/snmp-settings" -e "
      input { snmp { walk => ['1.3.6.1.2.1'] hosts => [$HOST] $USER interval => 3600 oid_mapping_format => 'dotted_string' } }
      output { file { path => '$TMP/snmp.json' } }" & SP=$!
    pids+=($SP)
    until [ -s "$TMP/snmp.json" ]; do sleep 0.01; done
    E=$(now)
    kill "$SP"
    GOT=$(python3 -c "import json,sys; e=json.loads(open('$TMP/snmp.json').readline()); print(sum(1 for k in e if k.startswith('1.3.6')))")
    SR=$(rate "$GOT" "$S" "$E")
    WHAT=$([ "$variant" = v2c ] && echo v2c || echo "v3 authPriv, SHA-256/AES-256")
    printf '| snmp (walk of mib-2, %s) | snmpbulkwalk %s | %s values/s | %s values/s | %s | %s of %s values |\n' "$WHAT" "$(dpkg-query -W -f='${Version}' snmp 2>/dev/null || true)" "$PEER" "$SR" "$(ratio "$SR" "$PEER")" "$GOT" "$VALUES"
  done
else
  echo "| snmp | net-snmp's snmpd/snmpbulkwalk not installed | | | | |"
fi

S=$(now); seq "$N" > /dev/null; E=$(now)
SEQ_RATE=$(rate "$N" "$S" "$E")
cat > "$TMP/pipe.conf" <<EOF
input { pipe { command => "seq $N" } }
output { null {} }
EOF
mkdir -p "$TMP/pipe-settings"
PAPI=$(port)
printf 'pipeline.workers: 2\napi.http.port: %s\npath.data: %s\n' "$PAPI" "$TMP/pipe-data" > "$TMP/pipe-settings/sluice.yml"
S=$(now)
target/release/sluice --log.level warn --path.settings "$TMP/pipe-settings" -f "$TMP/pipe.conf" & PP=$!
pids+=($PP)
pout() { curl -sf "127.0.0.1:$PAPI/_node/stats/events" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"]["out"])' 2>/dev/null || echo 0; }
until [ "$(pout)" -ge "$N" ]; do sleep 0.02; done
E=$(now)
kill "$PP"
printf '| pipe | `seq %s` | %s | %s | %s | %s of %s |\n' "$N" "$SEQ_RATE" "$(rate "$N" "$S" "$E")" "$(ratio "$(rate "$N" "$S" "$E")" "$SEQ_RATE")" "$N" "$N"

mkdir -p "$TMP/ls-settings"
printf 'pipeline.workers: 2\npath.data: %s\napi.enabled: false\n' "$TMP/ls-data" > "$TMP/ls-settings/sluice.yml"
BEFORE=$(out); START=$(now)
target/release/sluice --log.level warn --path.settings "$TMP/ls-settings" -e "
  input { generator { count => $N message => 'GET /index.html 200 5120' } }
  output { logstash { hosts => ['127.0.0.1:$LS'] ssl_enabled => false } }"
SENT=$(now)
LS_RATE=$(rate "$N" "$START" "$SENT")
row "logstash" "sluice's logstash output (whole run)" "$LS_RATE" "$START"
echo "| heartbeat, exec | (scheduled: one event per interval or cron tick) | | | | |"
