#!/usr/bin/env bash
# Kafka output and input throughput against a local Kafka 4 broker (KRaft, from Maven Central
# via scripts/kafka-node/run, started here on free ports), next to the broker's own perf tools
# in the same run (the issue's goal: ≥ 0.7 of them), for ~300-byte records:
#   - output: generator → kafka (records are the 300-byte message: codec plain, format
#     %{message}), 1 and 3 instances at once, against ProducerPerformance (1 and 3 at once);
#   - input: kafka → null in one consumer group, 1 and 3 instances, against
#     ConsumerPerformance (nMsg.sec, which includes its group join, as ours includes startup).
# The input's time is from the process start to the moment /_node/stats counts every event out.
# Usage: bench/kafka.sh [EVENTS] (default 1,000,000; 6 partitions)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-1000000}
scripts/install-kafka
cargo build --release --quiet
BIN=$PWD/target/release/sluice
TMP=$(mktemp -d)
KAFKA=scripts/kafka-node/run
B=$($KAFKA start "$TMP/kafka" 2>/dev/null)
trap '$KAFKA stop "$TMP/kafka"; rm -rf "$TMP"' EXIT
tool() { $KAFKA tool "$@"; }
now() { date +%s.%N; }
rate() { awk -v n="$1" -v s="$2" -v e="$3" 'BEGIN { printf "%.0f", n / (e - s) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
topic() { tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$B" --create --topic "$1" --partitions 6 --replication-factor 1 >/dev/null; }

machine "$(date -u +%Y-%m-%d)"
echo "kafka 4.4.0 (one broker, KRaft), 6 partitions; records: $N of 300 bytes"
echo

MSG=$(python3 -c 'print("x" * 300)')
# Output, 1 instance.
topic perf1; topic ours1; topic perf3; topic ours3
p1=$(tool org.apache.kafka.tools.ProducerPerformance --bootstrap-server "$B" --topic perf1 --num-records "$N" \
  --record-size 300 --throughput -1 --command-property acks=1 --command-property linger.ms=5 | grep '99.9th' | tail -1 \
  | sed -E 's/.* ([0-9.]+) records\/sec.*/\1/')
out() { # out TOPIC COUNT
  $BIN --log.level error --path.data "$TMP/data-$1-$RANDOM" -e "input { generator { count => $2 message => '$MSG' } }
    output { kafka { bootstrap_servers => '$B' topic_id => '$1' codec => plain { format => '%{message}' } } }"
}
s=$(now); out ours1 "$N"; e=$(now); o1=$(rate "$N" "$s" "$e")
# Output, 3 instances at once (a third each).
third=$((N / 3))
s=$(now)
for i in 1 2 3; do
  tool org.apache.kafka.tools.ProducerPerformance --bootstrap-server "$B" --topic perf3 --num-records "$third" \
    --record-size 300 --throughput -1 --command-property acks=1 --command-property linger.ms=5 >/dev/null &
done
wait; e=$(now); p3=$(rate $((third * 3)) "$s" "$e")
s=$(now); for i in 1 2 3; do out ours3 "$third" & done; wait; e=$(now); o3=$(rate $((third * 3)) "$s" "$e")

# Input: 1 and 3 instances in one group, until every event is counted out.
c1=$(tool org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$B" --topic perf1 --num-records "$N" \
  --timeout 60000 --hide-header --group "perf-c1" | awk -F', ' '{print $6}')
consume() { # consume TOPIC GROUP INSTANCES TOTAL -> events/s
  local pids=() ports=() s e i
  s=$(now)
  for i in $(seq 1 "$3"); do
    local port; port=$(free_port); ports+=("$port")
    mkdir -p "$TMP/set-$2-$i"
    printf 'api.http.port: %s\npath.data: %s\n' "$port" "$TMP/cdata-$2-$i" > "$TMP/set-$2-$i/sluice.yml"
    $BIN --log.level error --path.settings "$TMP/set-$2-$i" -e "input { kafka { bootstrap_servers => '$B' topics => ['$1']
      group_id => '$2' auto_offset_reset => 'earliest' codec => plain } } output { null {} }" &
    pids+=($!)
  done
  while :; do
    local sum=0 n
    for port in "${ports[@]}"; do
      # curl and sed only: a python3 start per poll took a tenth of a core from the run.
      n=$(curl -s "127.0.0.1:$port/_node/stats/events" 2>/dev/null | sed -n 's/.*"out":\([0-9]*\).*/\1/p')
      sum=$((sum + ${n:-0}))
    done
    [ "$sum" -ge "$4" ] && break
    sleep 0.05
  done
  e=$(now)
  kill -TERM "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
  rate "$4" "$s" "$e"
}
i1=$(consume ours1 g1 1 "$N")
c3=$(tool org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$B" --topic perf3 --num-records $((third * 3)) \
  --timeout 60000 --hide-header --group "perf-c3" | awk -F', ' '{print $6}')
i3=$(consume ours3 g3 3 $((third * 3)))

echo "| direction | instances | sluice events/s | Kafka's perf tool records/s | ratio |"
echo "|---|---|---|---|---|"
echo "| output (generator → kafka) | 1 | $o1 | $(printf %.0f "$p1") | $(ratio "$o1" "$p1") |"
echo "| output (generator → kafka) | 3 | $o3 | $p3 | $(ratio "$o3" "$p3") |"
echo "| input (kafka → null) | 1 | $i1 | $(printf %.0f "$c1") | $(ratio "$i1" "$c1") |"
echo "| input (kafka → null) | 3 (one group) | $i3 | $(printf %.0f "$c3") (1 consumer) | $(ratio "$i3" "$c3") |"
