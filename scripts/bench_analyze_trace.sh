#!/usr/bin/env bash
# Benchmark of `llmprof analyze trace` on a large trace (#43: a 2 GB trace in <= 20 s with
# <= 1 GB of memory on a 2-core CI-like machine; docs/analyze-trace.md records the results).
#
#   scripts/bench_analyze_trace.sh [GB] [--gz]
#
# Writes $TMPDIR/llmprof-bench-trace-<GB>gb.json once with scripts/make_big_trace.py (copies of
# the transformers fixture, shifted in time and ids), then times the analysis with
# /usr/bin/time (wall seconds, peak resident memory) and prints one line per run. --gz also
# times the same trace gzip-compressed.
set -euo pipefail
cd "$(dirname "$0")/.."
gb="${1:-2}"
bin=target/release/llmprof
[ -x "$bin" ] || { echo "build first: cargo build --release -p llmprof" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
trace="${TMPDIR:-/tmp}/llmprof-bench-trace-${gb}gb.json"
[ -f "$trace" ] || python3 scripts/make_big_trace.py "$trace" --gb "$gb"
inputs=("$trace")
if [ "${2:-}" = "--gz" ]; then
  [ -f "$trace.gz" ] || gzip -1 -k "$trace"
  inputs+=("$trace.gz")
fi
for input in "${inputs[@]}"; do
  log=$(mktemp)
  /usr/bin/time -v "$bin" analyze trace "$input" --format json >/dev/null 2>"$log" || { cat "$log" >&2; exit 1; }
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$log")
  size=$(du -m "$input" | cut -f1)
  echo "$(basename "$input"): ${size} MB, wall ${wall}, peak memory ${rss} MiB, $(nproc) cores, commit $(git rev-parse --short HEAD)"
  rm -f "$log"
done
