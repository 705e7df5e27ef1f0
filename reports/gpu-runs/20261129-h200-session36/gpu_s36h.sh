#!/usr/bin/env bash
# Session 36 call H (#44): the MoE combine reads the routing's slot positions and weights before
# its wait. MoE GPU tests, debug fast-path on DeepSeek-OCR ("full"), then call G's shim
# (.carry/old/) against this one alternating (timed pass): DeepSeek-OCR batch 1 twice, 32 once.
source scripts/device_lib.sh
TEST_TIMEOUT=100 lib_tests moe
FP_TIMEOUT=100 fast_path "moe_combine.*|all\+.*" full
for rep in 1 2; do
  for which in old new; do
    ab_side $which
    ab_pass "$which ocr b1 rep $rep" model=deepseek_ocr runtime.batch_size=1
    [ $rep = 1 ] && ab_pass "$which ocr b32 rep $rep" model=deepseek_ocr runtime.batch_size=32
  done
done | tee $OUT/ab.txt
echo "total $(( $(date +%s) - S0 )) s"
