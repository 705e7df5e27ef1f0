#!/usr/bin/env bash
# Session 36 call B (#44): the folded add + RMSNorm formed on the fly (gemv.cu kNorm: rstd
# applied to the GEMV's sums). GEMV GPU tests, debug fast-path on Llama-3.1-8B and every family,
# the microbenchmark of session 35's kernel against this one (tmp/s36/gemv_fold_bench.*), then
# the previous shim (session 35's HEAD, .carry/old/) against this one alternating twice:
# Llama-3.1-8B batch 1 and DeepSeek-OCR batch 1 (timed pass); Llama batch 1 by module.
source scripts/device_lib.sh
lib_tests kernels_gemv
fast_path "gemv_add_rms_norm.*bf16|all\+.*bf16" llama3_1_8b full
timeout 150 $PYTHON tmp/s36/gemv_fold_bench.py tmp/s36/gemv_l2_bench.so tmp/s36/gemv_fold_bench.so 2>&1 | tee $OUT/fold_bench.txt
LL="model=llama3_1_8b dataset=random_tokens infer.max_new_tokens=64 dataset.input_len=1024"
for rep in 1 2; do
  for which in old new; do
    ab_side $which
    for run in "ocr b1|model=deepseek_ocr runtime.batch_size=1" "llama b1|$LL runtime.batch_size=1"; do
      tag=${run%%|*}; ov=${run#*|}
      ab_pass "$which $tag rep $rep" $ov
    done
  done
done | tee $OUT/ab.txt
ab_side new
module_run llama_b1 $LL runtime.batch_size=1
echo "total $(( $(date +%s) - S0 )) s"
