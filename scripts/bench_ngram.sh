#!/usr/bin/env bash
# Benchmark: the no-repeat-n-gram rule's cost on decode over ONE token stream (#14's "n-gram rule
# vs none" row), in one process (llmprof-worker bench-ngram): the warm-up records the stream the
# rule produces; timed rounds alternate no rule and the rule, both replaying that stream (the
# argmax and the rule run, the recorded id is fed), so both read the same experts, plus both
# free-running for comparison. With random weights a rule-free decoder repeats one token and
# reads the same experts every step, which free runs would charge to the rule.
#
# Usage: scripts/bench_ngram.sh [OUT_DIR] [extra overrides...]
#   LLMPROF_BIN=target/release/llmprof   front end (the worker beside it, or LLMPROF_WORKER)
#   BATCH=32 TOKENS=1000 REPEATS=3       rows (copies of the sample page), forced tokens, rounds
# Output: OUT_DIR/ngram.json (ms per decode step per setting and round, the two differences)
# and the table on stdout. OUT_DIR must be a new or empty folder (exit 2 otherwise); relative
# paths are taken from the caller's folder.
set -euo pipefail
# Paths given relative to the caller's folder stay so after the cd to the repository.
abs() { [[ "$1" == /* ]] && echo "$1" || echo "$PWD/$1"; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(abs "${1:-$repo/tmp/bench-ngram/$(date -u +%Y%m%d-%H%M%S)}")
shift || true
BIN=$(abs "${LLMPROF_BIN:-$repo/target/release/llmprof}")
WORKER=$(abs "${LLMPROF_WORKER:-$(dirname "$BIN")/llmprof-worker}")
cd "$repo"
page=datasets/samples/page-01-text.png
[[ -x "$BIN" && -x "$WORKER" ]] || { echo "bench_ngram: $BIN or $WORKER is not executable (cargo build --release, or set LLMPROF_BIN)" >&2; exit 2; }
[[ -f "$page" ]] || { echo "bench_ngram: $page is missing" >&2; exit 2; }
if [[ -e "$out" && ! -d "$out" ]]; then
  echo "bench_ngram: $out is a file; give a new folder as OUT_DIR" >&2
  exit 2
fi
if [[ -d "$out" && -n "$(ls -A "$out")" ]]; then
  echo "bench_ngram: $out is not empty (an earlier benchmark's ngram.json would be overwritten); give a new OUT_DIR (without one the script makes a timestamped folder)" >&2
  exit 2
fi
mkdir -p "$out/page"
cp "$page" "$out/page/"
out_abs=$(cd "$out" && pwd)
b=${BATCH:-32}
"$BIN" stage1 --cfg job --resolve dataset=folder "dataset.root=$out_abs/page" \
  "dataset.sampling.num_epochs=$b" "runtime.batch_size=$b" runtime.warmup=1 \
  "runtime.repeats=${REPEATS:-3}" "infer.max_new_tokens=${TOKENS:-1000}" infer.ignore_eos=true \
  $'infer.prompt=\'<image>\nFree OCR. \'' "$@" > "$out/config.resolved.yaml"
"$WORKER" bench-ngram "$out"
