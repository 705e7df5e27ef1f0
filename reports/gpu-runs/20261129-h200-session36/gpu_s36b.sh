#!/usr/bin/env bash
# Session 36 call B (#44): the folded add + RMSNorm formed on the fly (gemv.cu kNorm: rstd
# applied to the GEMV's sums). GEMV GPU tests, debug fast-path on Llama-3.1-8B and every family,
# the microbenchmark of session 35's kernel against this one (tmp/s36/gemv_fold_bench.*), then
# the previous shim (session 35's HEAD, .carry/old/) against this one alternating twice:
# Llama-3.1-8B batch 1 and DeepSeek-OCR batch 1 (timed pass); Llama batch 1 by module.
source scripts/device_lib.sh
timeout 150 .carry/lib-tests --ignored --test-threads=1 kernels_gemv > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
for a in llama3_1_8b full; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "gemv_add_rms_norm.*bf16|all\+.*bf16" $OUT/fp_$a.out | head -3
done
timeout 150 $PYTHON tmp/s36/gemv_fold_bench.py tmp/s36/gemv_l2_bench.so tmp/s36/gemv_fold_bench.so 2>&1 | tee $OUT/fold_bench.txt
NEW_LD=$LD_LIBRARY_PATH
LL="model=llama3_1_8b dataset=random_tokens infer.max_new_tokens=64 dataset.input_len=1024"
for rep in 1 2; do
  for which in old new; do
    [ $which = old ] && export LD_LIBRARY_PATH=$PWD/.carry/old:$NEW_LD || export LD_LIBRARY_PATH=$NEW_LD
    for run in "ocr b1|model=deepseek_ocr runtime.batch_size=1" "llama b1|$LL runtime.batch_size=1"; do
      tag=${run%%|*}; ov=${run#*|}
      ab_pass "$which $tag rep $rep" $ov
    done
  done
done | tee $OUT/ab.txt
export LD_LIBRARY_PATH=$NEW_LD
module_run llama_b1 $LL runtime.batch_size=1
echo "total $(( $(date +%s) - S0 )) s"
