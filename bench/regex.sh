#!/usr/bin/env bash
# Regex matching speed: sluice-regex (Ruby syntax through PCRE2 with JIT, what conditions,
# mutate gsub and grok use) next to Rust's regex crate on the same patterns, same run.
# The ratio is sluice-regex over the regex crate. Usage: bench/regex.sh
set -euo pipefail
cd "$(dirname "$0")/.."
echo "machine: $(nproc) cores, $(uname -sr); $(date -u +%Y-%m-%d)"
cargo run --release --quiet -p sluice-regex --example match_bench
