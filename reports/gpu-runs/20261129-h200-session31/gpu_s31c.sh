#!/usr/bin/env bash
# Session 31 call C (#44): programmatic dependent launch for llmprof's decode-step kernels
# (runtime.optim.programmatic_launch). GPU tests of the kernels it touches (also session 30's
# unrerun 86f53ac), debug fast-path on Llama-3.1-8B and DeepSeek-OCR (its new variant), then
# Llama-3.1-8B batch 1 and 32 and DeepSeek-OCR batch 1 by module, off and on.
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 decode_attention add_rms_norm gemv rope_kv silu_mul routing router_logits combine_kernel > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -8
for a in llama3_1_8b full; do
  s=$(date +%s); timeout 200 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "programmatic|all\+" $OUT/fp_$a.out | head -4
done
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
for p in false true; do
  module_run llama_b1_pdl_$p $LL runtime.batch_size=1 runtime.optim.programmatic_launch=$p
  module_run llama_b32_pdl_$p $LL runtime.batch_size=32 runtime.optim.programmatic_launch=$p
  module_run ocr_b1_pdl_$p model=deepseek_ocr runtime.batch_size=1 runtime.optim.programmatic_launch=$p
done
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
echo "total $(( $(date +%s) - S0 )) s"
