#!/usr/bin/env bash
# `sluice test` on logstash-filter-verifier's own fixtures (issue 20: "each test case runs in
# milliseconds: the whole fixture set in well under a second"). Runs every fixture set with the
# arguments tests/verify.rs (and LFV's integration test) give it, one `sluice test` process per
# set, ROUNDS times; prints the median wall time of the whole set (process starts included),
# the comparisons it made, and the ratio to the 1 s goal. LFV itself needs a running Logstash
# (tens of seconds per run); none is installed here, so the goal is the baseline.
# Usage: bench/verify.sh [ROUNDS]   (needs ../shared or $SLUICE_SHARED)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ROUNDS=${1:-5}
D=${SLUICE_SHARED:-../shared}/compat/lfv_testdata
[ -d "$D" ] || { echo "no LFV fixtures at $D (set SLUICE_SHARED)" >&2; exit 1; }
cargo build --release --quiet
B=target/release/sluice
# name|arguments before the test-case directory ({D} is the fixture directory)
SETS=(
  "basic_pipeline|--pipelines {D}/basic_pipeline.yml --config {D}/basic_pipeline --add-missing-id"
  "basic_logstash_config_dir|--config {D}/basic_logstash_config_dir"
  "basic_logstash_config_file.conf|--config {D}/basic_logstash_config_file.conf"
  "basic_pipeline_debug|--pipelines {D}/basic_pipeline_debug.yml --config {D}/basic_pipeline_debug --debug"
  "filtermock|--pipelines {D}/filtermock.yml --config {D}/filtermock --mock {D}/mocks/filtermock.yml"
  "inputoutputmock|--pipelines {D}/inputoutputmock.yml --config {D}/inputoutputmock --mock {D}/mocks/inputoutputmock.yml"
  "issue_175|--pipelines {D}/issue_175.yml --config {D}/issue_175 --add-missing-id"
)
for n in drop_and_split conditional_output multiple_parallel_outputs pipeline_to_pipeline \
  codec_version_8_test codec_optional_test special_chars testcases_event issue_150 issue_150a \
  issue_153 issue_155 issue_166; do
  SETS+=("$n|--pipelines {D}/$n.yml --config {D}/$n")
done
run_all() {
  local s name args
  for s in "${SETS[@]}"; do
    name=${s%%|*}
    args=${s#*|}
    # shellcheck disable=SC2086
    "$B" test ${args//\{D\}/$D} "$D/testcases/$name"
  done
}
machine "${#SETS[@]} fixture sets, $ROUNDS rounds"
out=$(run_all)
comparisons=$(grep -c '^[☑☐]' <<<"$out")
failed=$(grep -c '^☐' <<<"$out" || true)
times=()
for _ in $(seq "$ROUNDS"); do
  t0=$(date +%s%N)
  run_all >/dev/null
  t1=$(date +%s%N)
  times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')")
done
med=$(echo "${times[@]}" | median)
inproc=$(grep -o '([0-9.]* s)' <<<"$out" | tr -d '( s)' | awk '{ s += $1 } END { printf "%.4f", s }')
echo "comparisons: $comparisons ($failed failed)"
echo "whole set, ${#SETS[@]} processes: median $med s (rounds: ${times[*]}); ratio to the 1 s goal $(ratio "$med" 1)"
echo "time inside sluice test (sum of the summaries' times): $inproc s"
