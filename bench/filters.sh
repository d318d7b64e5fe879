#!/usr/bin/env bash
# Events/s through each filter of issue 16, each next to `mutate { add_field }` (the baseline)
# measured in the same run: generator → FILTER → null, one message shaped for the filter.
# Runs are interleaved so that every filter sees the same machine load; each figure is the
# median of RUNS runs, with the CPU seconds per million events (the steadier figure).
#
#   bench/filters.sh [EVENTS] [RUNS]     (defaults 1,000,000 and 3)
#   ONLY=REGEX bench/filters.sh ...      only the filters whose name matches (and the baseline)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-1000000}
RUNS=${2:-3}
cargo build --release --quiet
BIN=target/release/sluice
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/settings"
printf 'api.enabled: false\npath.data: %s\n' "$TMP/data" > "$TMP/settings/sluice.yml"

# A 1,000,000-entry dictionary for translate (JSON), and how long loading it takes.
python3 - "$TMP/dict.json" <<'PY'
import json, sys
json.dump({f"key{i}": f"value number {i}" for i in range(1000000)}, open(sys.argv[1], "w"))
PY
TIMEFORMAT='%R'
load=$({ time "$BIN" --path.settings "$TMP/settings" --log.level error -t -e "filter { translate { source => \"message\" target => \"t\" dictionary_path => \"$TMP/dict.json\" } }" > /dev/null; } 2>&1)

CSV='2026-11-24T10:00:00Z,192.168.1.20,GET,/index.html,200,5120,"Mozilla/5.0 (X11; Linux x86_64)"'
# name | message (no single quotes) | filter
SCENARIOS=(
  "mutate add_field (baseline)|$CSV|mutate { add_field => { \"a\" => \"b\" } }"
  "csv, 7 columns|$CSV|csv { columns => [\"ts\", \"ip\", \"verb\", \"path\", \"status\", \"bytes\", \"agent\"] convert => { \"status\" => \"integer\" \"bytes\" => \"integer\" } }"
  "split, 2 parts (events/s counted on input)|first part;second part|split { terminator => \";\" }"
  "fingerprint SHA1|$CSV|fingerprint { method => SHA1 }"
  "fingerprint MURMUR3|$CSV|fingerprint { method => MURMUR3 }"
  "fingerprint SHA256, 2 sources concatenated|$CSV|fingerprint { method => SHA256 source => [\"message\", \"host\"] concatenate_sources => true }"
  "urldecode|/search?q=caf%C3%A9%20au%20lait&lang=fr|urldecode { }"
  "json_encode|$CSV|json_encode { source => \"[host]\" target => \"h\" }"
  "uuid|$CSV|uuid { target => \"id\" }"
  "truncate to 32 bytes|$CSV|truncate { length_bytes => 32 fields => [\"message\"] }"
  "de_dot, every field|$CSV|mutate { add_field => { \"a.b\" => \"c\" } } de_dot { }"
  "translate, exact, 1M-entry JSON dictionary|key123456|translate { source => \"message\" target => \"t\" dictionary_path => \"$TMP/dict.json\" }"
  "bytes|1.5 KB|bytes { target => \"n\" }"
  "age|$CSV|age { }"
  "environment|$CSV|environment { add_metadata_from_env => { \"home\" => \"HOME\" } }"
  "cidr, 3 networks|10.20.30.40|cidr { address => [\"%{message}\"] network => [\"192.168.0.0/16\", \"172.16.0.0/12\", \"10.0.0.0/8\"] add_tag => [\"internal\"] }"
  "tld|www.example.co.uk|tld { }"
  "xml, store_xml|<event><id>42</id><user name=\"bob\">login ok</user></event>|xml { source => \"message\" target => \"doc\" }"
  "xml, 2 xpath queries|<event><id>42</id><user name=\"bob\">login ok</user></event>|xml { source => \"message\" store_xml => false force_array => false xpath => { \"/event/id/text()\" => \"id\" \"/event/user/@name\" => \"user\" } }"
  "dns, reverse from /etc/hosts|127.0.0.1|dns { reverse => [\"message\"] hostsfile => [\"/etc/hosts\"] action => replace }"
  "metrics, one meter|$CSV|metrics { meter => [\"events\"] }"
  "elapsed, no matching tags|$CSV|elapsed { start_tag => \"s\" end_tag => \"e\" unique_id_field => \"message\" }"
  "throttle|$CSV|throttle { key => \"%{[host][name]}\" after_count => 1000000000 }"
  "prune, whitelist|$CSV|prune { whitelist_names => [\"^message\$\", \"^@\"] }"
)

if [[ -n "${ONLY:-}" ]]; then
  kept=("${SCENARIOS[0]}")
  for s in "${SCENARIOS[@]:1}"; do
    [[ "${s%%|*}" =~ $ONLY ]] && kept+=("$s")
  done
  SCENARIOS=("${kept[@]}")
fi

machine
echo "translate: loading the 1,000,000-entry JSON dictionary (sluice -t): $load s"
echo "events: $N per run, runs: $RUNS (interleaved); medians"
echo
echo "| filter | events/s | ratio to mutate add_field | CPU s / M events |"
echo "|---|---|---|---|"
filter_rows "$N" "$RUNS" "$TMP/settings" "${SCENARIOS[@]}"
