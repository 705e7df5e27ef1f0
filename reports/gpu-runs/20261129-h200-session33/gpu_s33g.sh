#!/usr/bin/env bash
# Session 33 call G (#44): decode attention's split pass with early requests of the cached rows,
# the skipped rescale and the new plan (call F's kernel) in the engine. Its GPU test, debug
# fast-path on Llama-3.1-8B, DeepSeek-V2-Lite and DeepSeek-OCR, module runs (Llama b1, b8, b32,
# b1 over 8,000 prompt tokens; DeepSeek-OCR b1), then #44's rows of both models (llmprof only).
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 decode_attention > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
for a in llama3_1_8b deepseek_v2_lite full; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"
done
LL="model=llama3_1_8b dataset=random_tokens infer.max_new_tokens=64"
module_run llama_b1 $LL dataset.input_len=1024 runtime.batch_size=1
module_run llama_b8 $LL dataset.input_len=1024 runtime.batch_size=8
module_run llama_b32 $LL dataset.input_len=1024 runtime.batch_size=32
module_run llama_b1_8k $LL dataset.input_len=8000 runtime.batch_size=1
module_run ocr_b1 model=deepseek_ocr runtime.batch_size=1
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
MODELS="llama3_1_8b deepseek_ocr" SKIP_HF=1 LLMPROF=$L timeout $(( 590 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/targets > /dev/null 2>&1
echo "== bench_targets rc=$?"; grep "^|" $OUT/targets/targets.md
cp $OUT/targets/targets.md $OUT/targets_g.md; rm -rf $OUT/targets
echo "total $(( $(date +%s) - S0 )) s"
