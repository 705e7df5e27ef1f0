#!/usr/bin/env bash
# Session 31 call H: after the review's fixes (the PDL policy asks the loaded code's
# architecture, a failed launch's error cleared, the timeline from charged starts). GPU tests,
# debug fast-path on DeepSeek-OCR, Llama-3.1-8B and DeepSeek-OCR batch 1 by module.
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 gemv decode_attention add_rms_norm routing > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -4
s=$(date +%s); timeout 200 $L debug fast-path --arch full --steps 16 > $OUT/fp_full.out 2>&1
echo "fast-path rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_full.out)"
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
module_run llama_b1 $LL runtime.batch_size=1
grep -h "programmatic dependent launch\|^Per run" $OUT/keep/llama_b1.modules.md | head -3
module_run ocr_b1 model=deepseek_ocr runtime.batch_size=1
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
echo "total $(( $(date +%s) - S0 )) s"
