#!/usr/bin/env bash
# Session 36 call D (#44): #44's rows for DeepSeek-OCR and Llama-3.1-8B (llmprof only) at the
# session's last build: scripts/bench_targets.sh.
source scripts/device_lib.sh
MODELS="deepseek_ocr llama3_1_8b" SKIP_HF=1 LLMPROF=$L timeout 580 scripts/bench_targets.sh $OUT/targets > $OUT/targets.log 2>&1
echo "== bench_targets rc=$?"; grep "^|" $OUT/targets/targets.md
cp $OUT/targets/targets.md $OUT/targets_d.md; rm -rf $OUT/targets
echo "total $(( $(date +%s) - S0 )) s"
