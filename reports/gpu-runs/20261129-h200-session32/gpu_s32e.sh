#!/usr/bin/env bash
# Session 32 call E (#44): add + RMSNorm folded into the one-row GEMV after it
# (runtime.optim.gemv_add_rms_norm). GPU tests, debug fast-path on Llama-3.1-8B, DeepSeek-V2-Lite
# and DeepSeek-OCR, both models at batch 1 by module, then #44's rows of both (llmprof only).
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 gemv add_rms_norm_kernel prefill_graphs > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
for a in llama3_1_8b deepseek_v2_lite full; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "gemv_add|all\+" $OUT/fp_$a.out | head -4
done
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
module_run llama_b1 $LL runtime.batch_size=1
module_run ocr_b1 model=deepseek_ocr runtime.batch_size=1
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
MODELS="llama3_1_8b deepseek_ocr" SKIP_HF=1 LLMPROF=$L timeout $(( 590 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/targets > /dev/null 2>&1
echo "== bench_targets rc=$?"; grep "^|" $OUT/targets/targets.md
cp $OUT/targets/targets.md $OUT/targets_e.md; rm -rf $OUT/targets
echo "total $(( $(date +%s) - S0 )) s"
