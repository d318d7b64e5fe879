#!/usr/bin/env bash
# Events/s through the ruby filter (issue 17), next to `mutate { uppercase }` measured in the
# same run: generator → FILTER → null, 2 workers, runs interleaved, medians of RUNS runs,
# with the CPU seconds per million events.
#   - one-liner: ruby { code => "event.set('x', event.get('message').upcase)" }
#   - a 20-line script: splits an access-log line, parses its query string, converts and
#     tags, formats an index name from the timestamp.
#
#   bench/ruby.sh [EVENTS] [RUNS]     (defaults 1,000,000 and 3)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=${1:-1000000}
RUNS=${2:-3}
scripts/install-ruby
cargo build --release --quiet
BIN=target/release/sluice
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/settings"
printf 'api.enabled: false\npath.data: %s\npipeline.workers: 2\n' "$TMP/data" > "$TMP/settings/sluice.yml"

SCRIPT="msg = event.get('message')
parts = msg.split(' ')
event.set('[http][method]', parts[0])
path, query = parts[1].split('?', 2)
event.set('[url][path]', path)
if query
  params = {}
  query.split('&').each do |kv|
    k, v = kv.split('=', 2)
    params[k] = v
  end
  event.set('[url][params]', params)
end
status = parts[2].to_i
event.set('[http][status]', status)
event.tag('server_error') if status >= 500
event.set('[http][kb]', (parts[3].to_i / 1024.0).round(2))
event.set('bucket', msg.hash % 16)
event.set('slow', parts[4].to_f > 0.5)
event.set('[@metadata][index]', 'logs-' + event.timestamp.time.strftime('%Y.%m.%d'))"

LINE='GET /search?q=rust&page=2 200 5120 0.734'
# name | message | filter
SCENARIOS=(
  "mutate uppercase (baseline)|$LINE|mutate { uppercase => [\"message\"] }"
  "ruby one-liner (upcase into a new field)|$LINE|ruby { code => \"event.set('x', event.get('message').upcase)\" }"
  "ruby, 20-line script|$LINE|ruby { code => \"$SCRIPT\" }"
)

machine
echo "events: $N per run, runs: $RUNS (interleaved), pipeline.workers: 2; medians"
echo
echo "| filter | events/s | ratio to mutate uppercase | CPU s / M events |"
echo "|---|---|---|---|"
filter_rows "$N" "$RUNS" "$TMP/settings" "${SCENARIOS[@]}"
