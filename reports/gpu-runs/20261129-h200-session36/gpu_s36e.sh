#!/usr/bin/env bash
# Session 36 call E (#44): the grouped GEMV finds a slot's expert 32 group ends at a time (a
# warp vote) instead of a binary search. GEMV and MoE GPU tests, debug fast-path on DeepSeek-OCR
# ("full") and DeepSeek-V2-Lite, then the previous shim (.carry/old/, call C's) against this one
# alternating twice (timed pass): DeepSeek-OCR batch 1, 2 and 32; its batch-1 step by module.
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 kernels_gemv moe > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
for a in full deepseek_v2_lite; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "all\+.*" $OUT/fp_$a.out | head -2
done
NEW_LD=$LD_LIBRARY_PATH
for rep in 1 2; do
  for which in old new; do
    [ $which = old ] && export LD_LIBRARY_PATH=$PWD/.carry/old:$NEW_LD || export LD_LIBRARY_PATH=$NEW_LD
    for run in "ocr b1|model=deepseek_ocr runtime.batch_size=1" "ocr b2|model=deepseek_ocr runtime.batch_size=2" "ocr b32|model=deepseek_ocr runtime.batch_size=32"; do
      tag=${run%%|*}; ov=${run#*|}
      ab_pass "$which $tag rep $rep" $ov
    done
  done
done | tee $OUT/ab.txt
export LD_LIBRARY_PATH=$NEW_LD
module_run ocr_b1 model=deepseek_ocr runtime.batch_size=1
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
echo "total $(( $(date +%s) - S0 )) s"
