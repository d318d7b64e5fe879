#!/usr/bin/env bash
# The elasticsearch/opensearch output against real nodes (scripts/search-nodes/run: Elasticsearch
# 7.10.2 and OpenSearch 3, 512 MB heap each, on this machine):
#   - generator → elasticsearch, ~300-byte events, 2 workers, batch 125: events/s;
#   - the node's own ceiling in the same run: bench/esbulk (Go, stdlib only) posts pre-built
#     _bulk bodies of the same documents, 125 per request, gzip level 1 (the output's default
#     compression), from 2 connections; the ratio of the two (the issue's goal: ≥ 0.8);
#   - the Apache seed pipeline (grok, date, geoip, useragent) ending in elasticsearch, memory and
#     persisted queue (needs ../shared/data/apache_logs; skipped without it).
# Usage: bench/elasticsearch.sh [EVENTS] (default 300,000)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-300000}
command -v go >/dev/null || { echo "bench/elasticsearch.sh: go not found" >&2; exit 1; }
cargo build --release --quiet
BIN=$PWD/target/release/sluice
TMP=$(mktemp -d)
(cd bench/esbulk && go build -o "$TMP/esbulk" .)
started=""
if ! { [ -f target/search-nodes/env ] && . target/search-nodes/env && curl -sf "$SLUICE_ES_URL" >/dev/null && curl -sf "$SLUICE_OPENSEARCH_URL" >/dev/null; }; then
  scripts/search-nodes/run start
  . target/search-nodes/env
  started=1
fi
cleanup() { rm -rf "$TMP"; [ -z "$started" ] || scripts/search-nodes/run stop; }
trap cleanup EXIT

now() { date +%s.%N; }
rate() { awk -v n="$1" -v s="$2" -v e="$3" 'BEGIN { printf "%.0f", n / (e - s) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
count() { # url index
  curl -s -XPOST "$1/$2/_refresh" >/dev/null
  curl -s "$1/$2/_count" | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])'
}
drop() { curl -s -XDELETE "$1/$2" >/dev/null; }

machine "$(date -u +%Y-%m-%d)"
echo "events: $N"
MSG="93.180.71.3 - - GET /downloads/product_2 HTTP/1.1 200 26318 - Debian APT-HTTP/1.3 (0.9.7.9) served from cache in 12 ms"
RAWMSG=$MSG
printf 'pipeline.workers: 2\npipeline.batch.size: 125\napi.enabled: false\n' > "$TMP/sluice.yml"
mkdir -p "$TMP/settings"; cp "$TMP/sluice.yml" "$TMP/settings/sluice.yml"

for target in "Elasticsearch 7.10.2|$SLUICE_ES_URL|elasticsearch" "OpenSearch 3|$SLUICE_OPENSEARCH_URL|opensearch"; do
  IFS='|' read -r name url plugin <<<"$target"
  echo
  echo "== $name ($url)"
  # Warm the node up (JIT, first index creation), so that neither measurement pays for it.
  "$TMP/esbulk" "$url" bench-warmup $((N / 3)) 125 2 "$RAWMSG" >/dev/null
  drop "$url" bench-warmup
  ceiling_run() {
    drop "$url" bench-ceiling
    local c got
    c=$("$TMP/esbulk" "$url" bench-ceiling "$N" 125 2 "$RAWMSG")
    got=$(count "$url" bench-ceiling)
    [ "$got" -eq "$N" ] || { echo "ceiling: expected $N documents, got $got" >&2; exit 1; }
    drop "$url" bench-ceiling
    echo "$c"
  }
  c1=$(ceiling_run)

  drop "$url" bench-sluice
  s=$(now)
  "$BIN" --log.level error --path.settings "$TMP/settings" -e "input { generator { count => $N message => \"$MSG\" } }
    output { $plugin { hosts => [\"$url\"] index => \"bench-sluice\" manage_template => false } }"
  e=$(now)
  got=$(count "$url" bench-sluice)
  [ "$got" -eq "$N" ] || { echo "sluice: expected $N documents, got $got" >&2; exit 1; }
  out=$(rate "$N" "$s" "$e")
  size=$(curl -s "$url/bench-sluice/_search?size=1" | python3 -c 'import json,sys; print(len(json.dumps(json.load(sys.stdin)["hits"]["hits"][0]["_source"], separators=(",", ":"))))')
  drop "$url" bench-sluice
  c2=$(ceiling_run)
  ceil=$(( c1 > c2 ? c1 : c2 ))
  echo "ceiling: esbulk, pre-built gzip bodies, 125 docs/request, 2 connections: $c1 docs/s before sluice's run, $c2 after"
  echo "sluice: generator → $plugin, 2 workers, batch 125: $out events/s, $(ratio "$out" "$ceil") of the higher ceiling; document size $size bytes"
done

SHARED=${SLUICE_SHARED:-../shared}
LOG="$SHARED/data/apache_logs"
if [ -f "$LOG" ]; then
  scripts/fetch-geoip >/dev/null
  A=$((N / 3))
  awk -v n="$A" '{ line[NR] = $0 } END { for (i = 0; i < n; i++) print line[i % NR + 1] }' "$LOG" > "$TMP/in.log"
  echo
  echo "== Apache seed pipeline → Elasticsearch 7.10.2 ($A lines, 2 workers)"
  for q in memory persisted; do
    mkdir -p "$TMP/$q"
    printf 'pipeline.ecs_compatibility: disabled\npipeline.workers: 2\napi.enabled: false\nqueue.type: %s\nqueue.drain: true\npath.data: %s\n' "$q" "$TMP/$q/data" > "$TMP/$q/sluice.yml"
    drop "$SLUICE_ES_URL" bench-apache
    s=$(now)
    "$BIN" --log.level error --path.settings "$TMP/$q" -e "input { stdin {} }
      filter {
        grok { match => { \"message\" => \"%{COMBINEDAPACHELOG}\" } }
        date { match => [ \"timestamp\", \"dd/MMM/yyyy:HH:mm:ss Z\" ] }
        geoip { source => \"clientip\" }
        useragent { source => \"agent\" }
      }
      output { elasticsearch { hosts => [\"$SLUICE_ES_URL\"] index => \"bench-apache\" manage_template => false } }" < "$TMP/in.log"
    e=$(now)
    got=$(count "$SLUICE_ES_URL" bench-apache)
    [ "$got" -eq "$A" ] || { echo "apache ($q): expected $A documents, got $got" >&2; exit 1; }
    echo "apache seed → elasticsearch, $q queue: $(rate "$A" "$s" "$e") events/s"
    drop "$SLUICE_ES_URL" bench-apache
  done
else
  echo "(Apache seed pipeline skipped: $LOG not found; set SLUICE_SHARED)"
fi
