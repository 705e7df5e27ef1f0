#!/usr/bin/env bash
# Session 31 call E (#44): a MoE decode step's routed experts in the GEMV kernel's grouped form
# (runtime.optim.gemv_kernel, at most 16 token slots). GPU tests, debug fast-path on DeepSeek-OCR,
# DeepSeek-OCR batch 1 by module, then its rows of #44's table (llmprof only).
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 gemv routing combine_kernel > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -8
s=$(date +%s); timeout 200 $L debug fast-path --arch full --steps 16 > $OUT/fp_full.out 2>&1
echo "fast-path full rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_full.out)"; grep -E "gemv|all\+" $OUT/fp_full.out | head -6
module_run ocr_b1 model=deepseek_ocr runtime.batch_size=1
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
s=$(date +%s)
MODELS=deepseek_ocr SKIP_HF=1 LLMPROF=$L timeout $(( 590 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/targets > /dev/null 2>&1
echo "== bench_targets rc=$? $(( $(date +%s) - s )) s"; grep "^|" $OUT/targets/targets.md
cp $OUT/targets/targets.md $OUT/ocr_targets.md; rm -rf $OUT/targets
echo "total $(( $(date +%s) - S0 )) s"
