#!/usr/bin/env bash
# GPU smoke test: stage 1 on two sample pages with the full-size synthetic model and a short
# decode, then check the artifacts; exits non-zero on any failure. Run on a machine with an
# NVIDIA GPU after ./bootstrap.sh --yes (or with LLMPROF_BIN pointing at a built llmprof).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${LLMPROF_BIN:-target/release/llmprof}
OUT=${1:-tmp/gpu-smoke}
shift || true
rm -rf "$OUT"
"$BIN" stage1 model=deepseek_ocr device=cuda dataset.sampling.num_samples_per_epoch=2 \
  infer.max_new_tokens=32 infer.ignore_eos=true runtime.warmup=1 runtime.repeats=2 \
  "hydra.run.dir=$OUT" "$@"
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
for f in report.md metrics.json stakeholder_summary.md operators.md kernels.md trace.json nvml.csv \
         env.json inputs.yaml assumptions.md static_compute.json status.json; do
  check "$f exists and is not empty" "[ -s '$OUT/$f' ]"
done
check "status succeeded" "grep -q '\"state\": \"succeeded\"' '$OUT/status.json'"
check "ran on CUDA" "grep -q '\"device\": \"Cuda' '$OUT/metrics.json'"
check "report says synthetic" "grep -q 'synthetic weights: timings valid, text meaningless' '$OUT/report.md'"
check "MBU present" "python3 -c \"import json,sys; m=json.load(open('$OUT/metrics.json')); sys.exit(0 if m['utilisation']['mbu_decode'] else 1)\""
check "kernels recorded" "grep -q '|' '$OUT/kernels.md'"
exit $fail
