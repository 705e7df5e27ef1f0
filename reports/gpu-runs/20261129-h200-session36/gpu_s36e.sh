#!/usr/bin/env bash
# Session 36 call E (#44): the grouped GEMV finds a slot's expert 32 group ends at a time (a
# warp vote) instead of a binary search. GEMV and MoE GPU tests, debug fast-path on DeepSeek-OCR
# ("full") and DeepSeek-V2-Lite, then the previous shim (.carry/old/, call C's) against this one
# alternating twice (timed pass): DeepSeek-OCR batch 1, 2 and 32; its batch-1 step by module.
source scripts/device_lib.sh
TEST_TIMEOUT=200 lib_tests kernels_gemv moe
fast_path "all\+.*" full deepseek_v2_lite
for rep in 1 2; do
  for which in old new; do
    ab_side $which
    for run in "ocr b1|model=deepseek_ocr runtime.batch_size=1" "ocr b2|model=deepseek_ocr runtime.batch_size=2" "ocr b32|model=deepseek_ocr runtime.batch_size=32"; do
      tag=${run%%|*}; ov=${run#*|}
      ab_pass "$which $tag rep $rep" $ov
    done
  done
done | tee $OUT/ab.txt
ab_side new
module_run ocr_b1 model=deepseek_ocr runtime.batch_size=1
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
echo "total $(( $(date +%s) - S0 )) s"
