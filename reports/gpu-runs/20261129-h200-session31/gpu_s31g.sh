#!/usr/bin/env bash
# Session 31 call G (#44): decode attention's launch plan at two waves and at least two blocks a
# row (from call F). GPU test and debug fast-path on Llama-3.1-8B, Llama batch 32 and 128 by
# module, DeepSeek-OCR's rows of #44's table (llmprof only).
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 decode_attention > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -4
s=$(date +%s); timeout 200 $L debug fast-path --arch llama3_1_8b --steps 16 > $OUT/fp_llama3_1_8b.out 2>&1
echo "fast-path rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_llama3_1_8b.out)"
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
module_run llama_b32 $LL runtime.batch_size=32
module_run llama_b128 $LL runtime.batch_size=128
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
MODELS=deepseek_ocr SKIP_HF=1 LLMPROF=$L timeout $(( 590 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/targets > /dev/null 2>&1
echo "== bench_targets rc=$?"; grep "^|" $OUT/targets/targets.md
cp $OUT/targets/targets.md $OUT/ocr_targets.md; rm -rf $OUT/targets
echo "total $(( $(date +%s) - S0 )) s"
