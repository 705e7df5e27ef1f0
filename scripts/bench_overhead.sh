#!/usr/bin/env bash
# Benchmark: overhead of NVTX ranges + NVML sampling on decode (target ≤ 2 %). Runs stage 1 twice
# on the same input and config — once without both (LLMPROF_NVTX=0, pipeline.nvml.enable=false),
# once with both — and compares the decode-step time (TPOT). Needs a GPU.
# Usage: scripts/bench_overhead.sh [extra overrides...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${LLMPROF_BIN:-target/release/llmprof}
OUT=${BENCH_OUT:-tmp/bench-overhead}
rm -rf "$OUT"
COMMON=(stage1 dataset.sampling.num_samples_per_epoch=1 infer.max_new_tokens=128 infer.ignore_eos=true
        infer.no_repeat_ngram_size=0 runtime.warmup=2 runtime.repeats=10
        pipeline.torch_profiler.enable=false pipeline.static_analysis.enable=false "$@")
LLMPROF_NVTX=0 "$BIN" "${COMMON[@]}" pipeline.nvml.enable=false "hydra.run.dir=$OUT/without" >/dev/null
"$BIN" "${COMMON[@]}" pipeline.nvml.enable=true "hydra.run.dir=$OUT/with" >/dev/null
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
m = {k: json.load(open(f"{out}/{k}/metrics.json")) for k in ("without", "with")}
print("| run | TPOT mean ms | TPOT p50 ms | decode ms (mean) | n steps |")
print("|---|---:|---:|---:|---:|")
for k, v in m.items():
    s = v["stages"]["decode_step"]; d = v["stages"]["decode"]
    print(f"| {k} NVTX+NVML | {s['mean_ms']:.4f} | {s['p50_ms']:.4f} | {d['mean_ms']:.2f} | {s['n']} |")
a = m["without"]["stages"]["decode_step"]["p50_ms"]; b = m["with"]["stages"]["decode_step"]["p50_ms"]
print(f"\noverhead on TPOT p50: {100 * (b / a - 1):+.2f} % (target <= 2 %)")
PY
