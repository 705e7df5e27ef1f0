#!/usr/bin/env bash
# Performance round 3 (#44) in one command on the GPU machine: the dense decoders at batch 1, 8,
# 32 and 128 (1,024 random prompt tokens, 64 new, full-size synthetic weights, bf16) and
# DeepSeek-OCR at batch 1 and 32 (the sample page, 128 forced tokens), each next to transformers
# (scripts/bench_vs_hf.sh), then one table with the floor, the fraction of it and #44's target
# for every row (scripts/bench_targets.py).
#
#   scripts/bench_targets.sh [OUT_DIR] [override ...]
#   MODELS="llama3_1_8b deepseek_ocr"   benches to run (qwen2_5_7b also has targets)
#   SKIP_HF=1                           llmprof only (empty transformers column)
#   LLMPROF, PYTHON                     as scripts/bench_vs_hf.sh takes them
# Overrides after OUT_DIR go to every llmprof run (e.g. runtime.optim.gemv_kernel=true).
# Output: OUT_DIR/<model>/ (each bench), OUT_DIR/targets.md.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-tmp/bench-targets/$(date -u +%Y%m%d-%H%M%S)}
shift || true
python=${PYTHON:-python3}
mkdir -p "$out"
status=0
for m in ${MODELS:-llama3_1_8b deepseek_ocr}; do
  s=$(date +%s)
  if [[ "$m" == deepseek_ocr ]]; then
    BATCHES="1 32" NGRAM_ROW=0 LONG_TOKENS=0 DISTINCT_ROW=0 KINETO_ROW=0 \
      scripts/bench_vs_hf.sh "$out/$m" "$@" > "$out/$m.log" 2>&1
  else
    MODEL=$m BATCHES="1 8 32 128" NEW_TOKENS=64 PROMPT_LEN=1024 KINETO_ROW=0 \
      scripts/bench_vs_hf.sh "$out/$m" "$@" > "$out/$m.log" 2>&1
  fi
  rc=$?
  echo "bench_targets: $m rc=$rc $(( $(date +%s) - s )) s (log $out/$m.log)" >&2
  [[ $rc == 0 ]] || status=1
done
"$python" scripts/bench_targets.py "$out" | tee "$out/targets.md" || status=1
exit $status
