#!/usr/bin/env bash
# Session 36 call C (#44): RoPE tables gathered from a kept table (Rope::cos_sin_below) and the
# first layer's input norm folded into its q/k/v GEMV (a zero delta). GPU tests (RoPE, GEMV),
# debug fast-path on Llama-3.1-8B and every family, then the previous worker (.carry/old/,
# session 35's Rust) against this one alternating twice (timed pass): DeepSeek-OCR batch 1 and
# 32, Llama-3.1-8B batch 1; then both models' batch-1 step by module.
source scripts/device_lib.sh
lib_tests rope kernels_gemv
fast_path "gemv_add_rms_norm.*|all\+.*" llama3_1_8b full
LL="model=llama3_1_8b dataset=random_tokens infer.max_new_tokens=64 dataset.input_len=1024"
for rep in 1 2; do
  for which in old new; do
    ab_side $which
    for run in "ocr b1|model=deepseek_ocr runtime.batch_size=1" "ocr b32|model=deepseek_ocr runtime.batch_size=32" "llama b1|$LL runtime.batch_size=1"; do
      tag=${run%%|*}; ov=${run#*|}
      ab_pass "$which $tag rep $rep" $ov
    done
  done
done | tee $OUT/ab.txt
ab_side new
module_run ocr_b1 model=deepseek_ocr runtime.batch_size=1
module_run llama_b1 $LL runtime.batch_size=1
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
echo "total $(( $(date +%s) - S0 )) s"
