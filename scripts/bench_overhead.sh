#!/usr/bin/env bash
# Benchmark: overhead of NVTX ranges + NVML sampling on decode (target ≤ 2 %), within ONE
# process: repeats alternate bare / instrumented (llmprof-worker bench-overhead), so run-to-run
# noise of the launch-bound eager decode cancels out. Needs a GPU for meaningful numbers.
# Usage: scripts/bench_overhead.sh [extra overrides...]   (output: $BENCH_OUT/overhead.json)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${LLMPROF_BIN:-target/release/llmprof}
WORKER=${LLMPROF_WORKER:-$(dirname "$BIN")/llmprof-worker}
OUT=${BENCH_OUT:-tmp/bench-overhead}
rm -rf "$OUT" && mkdir -p "$OUT"
"$BIN" stage1 --cfg job --resolve dataset.sampling.num_samples_per_epoch=1 infer.max_new_tokens=128 \
  infer.ignore_eos=true infer.no_repeat_ngram_size=0 runtime.warmup=2 runtime.repeats=10 "$@" \
  > "$OUT/config.resolved.yaml"
"$WORKER" bench-overhead "$OUT"
