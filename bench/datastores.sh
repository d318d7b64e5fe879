#!/usr/bin/env bash
# The data-store plugins of issue 39 against the real servers the tests use, each next to a
# baseline client doing the same work against the same server in the same run (bench/storebench,
# Go: the servers' own Go client for RabbitMQ, the standard library elsewhere; psql and pgbench
# for PostgreSQL; curl for S3). Events are ~200-byte JSON documents; sluice runs 2 workers,
# batch 125, memory queue, output null. Rows:
#   es-input     elasticsearch input reading an index by scroll (size 1000) | storebench esscroll
#   es-filter    elasticsearch filter, one term query per event             | essearch, 2 clients
#   http         http filter, one GET per event against a Go server         | httpget, 2 clients
#   jdbc         jdbc input, SELECT of a PostgreSQL table                    | psql -c SELECT
#   jdbc-stream  jdbc_streaming, one lookup by key per event                 | pgbench, 2 clients
#   jdbc-static  jdbc_static, the table loaded locally, one lookup per event | the same pipeline
#                                                                              without the filter
#   s3-output    s3 output to s3proxy (10 MB objects)                        | curl PUT of the same
#                                                                              objects, one by one
#   s3-input     s3 input reading those objects (codec plain, its default)  | curl GET of them
#   sqs          sqs input, messages from ElasticMQ                         | storebench sqsrecv
#   rabbitmq-out rabbitmq output, publisher confirms                         | amqppub, 2 channels
#   rabbitmq-in  rabbitmq input, manual acks                                 | amqpget, prefetch 256
#   memcached    memcached filter, a set and a get per event                 | memcache, 2 clients
# A rate is events over the seconds from the process's start until its last event was out (the
# process's exit for the inputs and filters that end; /_node/stats for those that do not).
# Needs what scripts/test installs (PostgreSQL, rabbitmq-server, memcached, s3proxy and
# ElasticMQ via scripts/fetch-aws-servers, the search nodes via scripts/search-nodes/run).
# Usage: bench/datastores.sh [SCALE] [ROWS] (SCALE multiplies the default event counts, 1 by
# default; ROWS is a comma-separated subset of the row names above)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SCALE=${1:-1}
ONLY=",${2:-es-input,es-filter,http,jdbc,jdbc-stream,jdbc-static,s3-output,s3-input,sqs,rabbitmq-out,rabbitmq-in,memcached},"
want() { [[ "$ONLY" == *",$1,"* ]]; }
n() { awk -v a="$1" -v s="$SCALE" 'BEGIN { printf "%d", a * s }'; }
command -v go >/dev/null || { echo "bench/datastores.sh: go not found" >&2; exit 1; }
cargo build --release --quiet
BIN=$PWD/target/release/sluice
TMP=$(mktemp -d)
chmod 755 "$TMP"
(cd bench/storebench && go build -o "$TMP/storebench" .)
SB=$TMP/storebench
pids=()
started_search=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -z "$started_search" ] || scripts/search-nodes/run stop
  rm -rf "$TMP"
}
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
rate() { awk -v n="$1" -v s="$2" -v e="$3" 'BEGIN { printf "%.0f", n / (e - s) }'; }
wait_port() { for _ in $(seq 600); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "nothing listening on $1" >&2; return 1; }
# row NAME SLUICE_RATE BASELINE_RATE BASELINE_NAME
row() { printf '| %s | %s | %s (%s) | %s |\n' "$1" "$2" "$3" "$4" "$(ratio "$2" "$3")"; }

# sluice_timed N CONFIG: runs sluice on CONFIG until it exits; prints N / its seconds.
sluice_timed() {
  local s e
  s=$(now)
  "$BIN" --log.level warn --pipeline.workers 2 --path.data "$TMP/data-$RANDOM" -e "$2" >/dev/null
  e=$(now)
  rate "$1" "$s" "$e"
}
# sluice_until N CONFIG: runs sluice on CONFIG until /_node/stats counts N events out; prints
# N / the seconds from its start.
sluice_until() {
  local api s e pid d
  api=$(port)
  d=$TMP/run-$RANDOM
  mkdir -p "$d/settings"
  printf 'pipeline.workers: 2\napi.http.port: %s\npath.data: %s\n' "$api" "$d/data" > "$d/settings/sluice.yml"
  s=$(now)
  "$BIN" --log.level warn --path.settings "$d/settings" -e "$2" >/dev/null &
  pid=$!
  until [ "$(curl -sf "127.0.0.1:$api/_node/stats/events" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"]["out"])' 2>/dev/null || echo 0)" -ge "$1" ]; do
    kill -0 "$pid" 2>/dev/null || { echo "sluice exited early" >&2; return 1; }
    sleep 0.02
  done
  e=$(now)
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rate "$1" "$s" "$e"
}
# base N COMMAND...: N / the seconds COMMAND says it took (its last line), or its wall time.
base() {
  local n=$1 s e out
  shift
  s=$(now)
  out=$("$@" | tail -1)
  e=$(now)
  if [[ "$out" =~ ^[0-9]+\.[0-9]+$ ]]; then
    awk -v n="$n" -v t="$out" 'BEGIN { printf "%.0f", n / t }'
  else
    rate "$n" "$s" "$e"
  fi
}

machine "$(date -u +%Y-%m-%d)"
echo "scale $SCALE"
echo
echo "| plugin | sluice events/s | baseline events/s | ratio |"
echo "|---|---|---|---|"

# ---- Elasticsearch ---------------------------------------------------------------------
if want es-input || want es-filter; then
  if ! { [ -f target/search-nodes/env ] && . target/search-nodes/env && curl -sf "$SLUICE_ES_URL" >/dev/null; }; then
    scripts/search-nodes/run start >/dev/null
    . target/search-nodes/env
    started_search=1
  fi
  ES=$SLUICE_ES_URL
  N=$(n 200000)
  curl -sf -XDELETE "$ES/bench-datastores" >/dev/null || true
  curl -sf -XPUT "$ES/bench-datastores" -H 'content-type: application/json' \
    -d '{"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":{"properties":{"n":{"type":"long"}}}}' >/dev/null
  "$SB" esindex "$ES" bench-datastores "$N" >/dev/null
  # A node just started and filled runs its first searches slower (the JVM's warm-up): one
  # pass of each kind first, not measured.
  "$SB" esscroll "$ES" bench-datastores 1000 >/dev/null
  "$SB" essearch "$ES" bench-datastores "$(n 20000)" 2 >/dev/null
  if want es-input; then
    b=$(base "$N" "$SB" esscroll "$ES" bench-datastores 1000)
    s=$(sluice_timed "$N" "input { elasticsearch { hosts => [\"$ES\"] index => \"bench-datastores\" size => 1000
      query => '{ \"query\": { \"match_all\": {} }, \"sort\": [\"_doc\"] }' } } output { null {} }")
    row "elasticsearch input (scroll, $N documents)" "$s" "$b" "Go scroll client"
  fi
  if want es-filter; then
    M=$(n 20000)
    printf '{ "size": 1, "query": { "term": { "n": %%{[event][sequence]} } } }' > "$TMP/es-query.json"
    b=$(base "$M" "$SB" essearch "$ES" bench-datastores "$M" 2)
    s=$(sluice_timed "$M" "input { generator { count => $M } }
      filter { elasticsearch { hosts => [\"$ES\"] index => \"bench-datastores\" query_template => \"$TMP/es-query.json\"
        fields => { \"message\" => \"found\" } } } output { null {} }")
    row "elasticsearch filter (term query per event)" "$s" "$b" "Go client, 2 connections"
  fi
fi

# ---- HTTP -------------------------------------------------------------------------------
if want http; then
  P=$(port)
  "$SB" httpsink "127.0.0.1:$P" & pids+=($!)
  wait_port "$P"
  M=$(n 50000)
  b=$(base "$M" "$SB" httpget "http://127.0.0.1:$P/x" "$M" 2)
  s=$(sluice_timed "$M" "input { generator { count => $M } }
    filter { http { url => \"http://127.0.0.1:$P/x?n=%{[event][sequence]}\" verb => \"GET\" target_body => \"reply\" } }
    output { null {} }")
  row "http filter (GET per event)" "$s" "$b" "Go client, 2 connections"
fi

# ---- PostgreSQL ---------------------------------------------------------------------------
if want jdbc || want jdbc-stream || want jdbc-static; then
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  PGPORT=$(port)
  mkdir -p "$TMP/pg"
  chown postgres "$TMP/pg" 2>/dev/null || true
  asdb() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
  asdb "$PGBIN/initdb" -D "$TMP/pg/data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C >/dev/null
  asdb "$PGBIN/postgres" -D "$TMP/pg/data" -p "$PGPORT" -c listen_addresses=127.0.0.1 -c fsync=off -k "$TMP/pg" >"$TMP/pg.log" 2>&1 & pids+=($!)
  wait_port "$PGPORT"
  sleep 0.5
  PSQL=(psql -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres postgres)
  N=$(n 500000)
  "${PSQL[@]}" -c "CREATE TABLE t (n bigint PRIMARY KEY, message text, host text, service text, at timestamptz);
    INSERT INTO t SELECT i, '93.180.71.3 - - [17/May/2015:08:05:32 +0000] GET /downloads/product_1 HTTP/1.1 304 0 Debian APT-HTTP', 'web-01', 'nginx', now() FROM generate_series(0, $N - 1) i;" -c "VACUUM ANALYZE t"
  JDBC="jdbc_connection_string => \"jdbc:postgresql://127.0.0.1:$PGPORT/postgres\" jdbc_user => \"postgres\" jdbc_driver_class => \"org.postgresql.Driver\""
  if want jdbc; then
    b=$(base "$N" "${PSQL[@]}" -At -c "SELECT * FROM t")
    s=$(sluice_timed "$N" "input { jdbc { $JDBC statement => \"SELECT * FROM t\" } } output { null {} }")
    row "jdbc input (PostgreSQL, $N rows)" "$s" "$b" "psql SELECT"
  fi
  if want jdbc-stream; then
    M=$(n 50000)
    printf '\\set id random(0, %d)\nSELECT message FROM t WHERE n = :id;\n' "$((N - 1))" > "$TMP/lookup.sql"
    chmod 644 "$TMP/lookup.sql"
    b=$(pgbench -n -h 127.0.0.1 -p "$PGPORT" -U postgres -M simple -c 2 -j 2 -t "$((M / 2))" -f "$TMP/lookup.sql" postgres 2>/dev/null |
      sed -n 's/^tps = \([0-9.]*\).*/\1/p' | cut -d. -f1)
    s=$(sluice_timed "$M" "input { generator { count => $M } }
      filter { jdbc_streaming { $JDBC statement => \"SELECT message FROM t WHERE n = :n\"
        parameters => { \"n\" => \"[event][sequence]\" } target => \"row\" } } output { null {} }")
    row "jdbc_streaming (lookup per event, no cache hits)" "$s" "$b" "pgbench -M simple, 2 clients"
  fi
  if want jdbc-static; then
    M=$(n 200000)
    K=$(n 10000)
    b=$(sluice_timed "$M" "input { generator { count => $M } } output { null {} }")
    s=$(sluice_timed "$M" "input { generator { count => $M } }
      filter { jdbc_static { $JDBC
        loaders => [ { query => \"SELECT n, service FROM t WHERE n < $K\" local_table => \"svc\" } ]
        local_db_objects => [ { name => \"svc\" index_columns => [\"n\"] columns => [[\"n\", \"BIGINT\"], [\"service\", \"varchar(32)\"]] } ]
        local_lookups => [ { query => \"SELECT service FROM svc WHERE n = :n\" parameters => { \"n\" => \"[event][sequence]\" } target => \"svc\" } ] } }
      output { null {} }")
    row "jdbc_static (local lookup per event, $K rows loaded)" "$s" "$b" "the pipeline without the filter"
  fi
fi

# ---- S3 and SQS -------------------------------------------------------------------------------
if want s3-output || want s3-input || want sqs; then
  KEY=AKIDSLUICEBENCH SECRET=sluice-bench-secret
  if want s3-output || want s3-input; then
    lib=${SLUICE_S3PROXY_LIB:-$HOME/.cache/sluice/s3proxy-2.6.0/lib}
    [ -d "$lib" ] || { echo "no s3proxy at $lib (run scripts/fetch-aws-servers)" >&2; exit 1; }
    S3P=$(port)
    mkdir -p "$TMP/s3/data/bench"
    printf 's3proxy.endpoint=http://127.0.0.1:%s\ns3proxy.authorization=aws-v2-or-v4\ns3proxy.identity=%s\ns3proxy.credential=%s\njclouds.provider=filesystem\njclouds.filesystem.basedir=%s\n' \
      "$S3P" "$KEY" "$SECRET" "$TMP/s3/data" > "$TMP/s3/conf"
    java -Xmx512m -DLOG_LEVEL=warn -cp "$lib/*" org.gaul.s3proxy.Main --properties "$TMP/s3/conf" >"$TMP/s3/log" 2>&1 & pids+=($!)
    wait_port "$S3P"
    S3="http://127.0.0.1:$S3P"
    AWS="endpoint => \"$S3\" access_key_id => \"$KEY\" secret_access_key => \"$SECRET\" region => \"us-east-1\" additional_settings => { \"force_path_style\" => \"true\" }"
    N=$(n 500000)
    CURL=(curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$KEY:$SECRET")
    # The s3 output ends with its last upload; its objects are the baselines' input.
    s=$(sluice_timed "$N" "input { generator { count => $N } }
      output { s3 { bucket => \"bench\" $AWS prefix => \"out/\" size_file => 10485760 codec => json_lines
        temporary_directory => \"$TMP/s3tmp\" } }")
    mkdir -p "$TMP/objects"
    (cd "$TMP/s3/data/bench" && find out -type f) > "$TMP/keys"
    while read -r k; do cp "$TMP/s3/data/bench/$k" "$TMP/objects/$(basename "$k")"; done < "$TMP/keys"
    if want s3-output; then
      put() { for f in "$TMP"/objects/*; do "${CURL[@]}" -T "$f" "$S3/bench/copy/$(basename "$f")" >/dev/null; done; }
      b=$(base "$N" put)
      row "s3 output ($N events, $(wc -l < "$TMP/keys") objects of ≤ 10 MB)" "$s" "$b" "curl PUT of the same objects"
    fi
    if want s3-input; then
      # The input leaves objects modified in the last 3 s for its next pass, as Logstash's does.
      sleep 4
      get() { while read -r k; do "${CURL[@]}" "$S3/bench/$k" >/dev/null; done < "$TMP/keys"; }
      b=$(base "$N" get)
      s=$(sluice_until "$N" "input { s3 { bucket => \"bench\" $AWS prefix => \"out/\"
        sincedb_path => \"$TMP/sincedb\" } } output { null {} }")
      row "s3 input (the same objects)" "$s" "$b" "curl GET of them"
    fi
  fi
  if want sqs; then
    lib=${SLUICE_ELASTICMQ_LIB:-$HOME/.cache/sluice/elasticmq-1.6.11/lib}
    [ -d "$lib" ] || { echo "no ElasticMQ at $lib (run scripts/fetch-aws-servers)" >&2; exit 1; }
    MQP=$(port)
    mkdir -p "$TMP/mq"
    printf 'include classpath("application.conf")\nnode-address { protocol = http, host = 127.0.0.1, port = %s, context-path = "" }\nrest-sqs { enabled = true, bind-port = %s, bind-hostname = "127.0.0.1", sqs-limits = strict }\nrest-stats { enabled = false }\nqueues { }\n' \
      "$MQP" "$MQP" > "$TMP/mq/conf"
    java -Xmx512m "-Dconfig.file=$TMP/mq/conf" -cp "$lib/*" org.elasticmq.server.Main >"$TMP/mq/log" 2>&1 & pids+=($!)
    wait_port "$MQP"
    MQ="http://127.0.0.1:$MQP"
    M=$(n 50000)
    "$SB" sqssend "$MQ" base "$M" >/dev/null
    b=$(base "$M" "$SB" sqsrecv "$MQ" base "$M")
    "$SB" sqssend "$MQ" bench "$M" >/dev/null
    s=$(sluice_until "$M" "input { sqs { queue => \"bench\" endpoint => \"$MQ\" access_key_id => \"$KEY\" secret_access_key => \"$SECRET\"
      region => \"us-east-1\" polling_frequency => 1 } } output { null {} }")
    row "sqs input ($M messages, 1 thread)" "$s" "$b" "Go client, receive 10 + delete batch"
  fi
fi

# ---- RabbitMQ ---------------------------------------------------------------------------------
if want rabbitmq-out || want rabbitmq-in; then
  RMQ=$(port)
  d=$TMP/rabbit
  mkdir -p "$d"
  printf 'listeners.tcp.default = 127.0.0.1:%s\ndisk_free_limit.absolute = 1MB\nlog.console = false\n' "$RMQ" > "$d/rabbitmq.conf"
  echo '[].' > "$d/enabled_plugins"
  env RABBITMQ_NODENAME="bench-$$@localhost" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$RMQ" \
    RABBITMQ_DIST_PORT="$(port)" RABBITMQ_MNESIA_BASE="$d/mnesia" RABBITMQ_LOG_BASE="$d/log" \
    RABBITMQ_CONFIG_FILE="$d/rabbitmq.conf" RABBITMQ_ADVANCED_CONFIG_FILE="$d/advanced.config" \
    RABBITMQ_CONF_ENV_FILE="$d/rabbitmq-env.conf" RABBITMQ_ENABLED_PLUGINS_FILE="$d/enabled_plugins" \
    RABBITMQ_PID_FILE="$d/pid" RABBITMQ_ALLOW_INPUT=true RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-noinput HOME="$d" \
    /usr/lib/rabbitmq/bin/rabbitmq-server </dev/null >"$d/out.log" 2>&1 & pids+=($!)
  wait_port "$RMQ"
  AMQP="amqp://guest:guest@127.0.0.1:$RMQ/"
  M=$(n 200000)
  for _ in $(seq 300); do "$SB" amqpdeclare "$AMQP" base >/dev/null 2>&1 && break; sleep 0.2; done
  "$SB" amqpdeclare "$AMQP" bench >/dev/null
  b=$(base "$M" "$SB" amqppub "$AMQP" base k "$M" 2)
  s=$(sluice_timed "$M" "input { generator { count => $M } }
    output { rabbitmq { host => \"127.0.0.1\" port => $RMQ exchange => \"bench\" exchange_type => \"direct\" key => \"k\" } }")
  want rabbitmq-out && row "rabbitmq output ($M events, confirms)" "$s" "$b" "amqp091-go, 2 channels, confirms per 125"
  if want rabbitmq-in; then
    b=$(base "$M" "$SB" amqpget "$AMQP" base "$M" 256)
    s=$(sluice_until "$M" "input { rabbitmq { host => \"127.0.0.1\" port => $RMQ queue => \"bench\" durable => true
      exchange => \"bench\" exchange_type => \"direct\" key => \"k\" } } output { null {} }")
    row "rabbitmq input ($M messages, prefetch 256)" "$s" "$b" "amqp091-go, prefetch 256, ack per 125"
  fi
fi

# ---- memcached --------------------------------------------------------------------------------
if want memcached; then
  MP=$(port)
  memcached -l 127.0.0.1 -p "$MP" -U 0 -u root -m 256 & pids+=($!)
  wait_port "$MP"
  M=$(n 100000)
  b=$(base "$M" "$SB" memcache "127.0.0.1:$MP" "$M" 2)
  s=$(sluice_timed "$M" "input { generator { count => $M } }
    filter { memcached { hosts => [\"127.0.0.1:$MP\"] set => { \"[event][sequence]\" => \"s%{[event][sequence]}\" }
      get => { \"s%{[event][sequence]}\" => \"[got]\" } } } output { null {} }")
  row "memcached filter (set + get per event)" "$s" "$b" "Go client, 2 connections"
fi
