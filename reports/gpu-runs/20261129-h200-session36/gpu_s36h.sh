#!/usr/bin/env bash
# Session 36 call H (#44): the MoE combine reads the routing's slot positions and weights before
# its wait. MoE GPU tests, debug fast-path on DeepSeek-OCR ("full"), then call G's shim
# (.carry/old/) against this one alternating (timed pass): DeepSeek-OCR batch 1 twice, 32 once.
source scripts/device_lib.sh
timeout 100 .carry/lib-tests --ignored --test-threads=1 moe > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
s=$(date +%s); timeout 100 $L debug fast-path --arch full --steps 16 > $OUT/fp_full.out 2>&1
echo "fast-path full rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_full.out)"; grep -E "moe_combine.*|all\+.*" $OUT/fp_full.out | head -4
NEW_LD=$LD_LIBRARY_PATH
for rep in 1 2; do
  for which in old new; do
    [ $which = old ] && export LD_LIBRARY_PATH=$PWD/.carry/old:$NEW_LD || export LD_LIBRARY_PATH=$NEW_LD
    ab_pass "$which ocr b1 rep $rep" model=deepseek_ocr runtime.batch_size=1
    [ $rep = 1 ] && ab_pass "$which ocr b32 rep $rep" model=deepseek_ocr runtime.batch_size=32
  done
done | tee $OUT/ab.txt
echo "total $(( $(date +%s) - S0 )) s"
