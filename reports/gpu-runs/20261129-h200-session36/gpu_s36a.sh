#!/usr/bin/env bash
# Session 36 call A: (1) session 35's last gemv.cu edits, never run on a GPU: the GEMV GPU tests
# (the SwiGLU forms' new shapes) and debug fast-path on Llama-3.1-8B and every family ("full");
# (2) the L2-ahead microbenchmark (tmp/s36/gemv_l2_bench.*); (3) Llama-3.1-8B batch 1's decode
# step by module at HEAD.
source scripts/device_lib.sh
timeout 150 .carry/lib-tests --ignored --test-threads=1 kernels_gemv > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
for a in llama3_1_8b full; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "gemv_swiglu" $OUT/fp_$a.out | head -3
done
timeout 200 $PYTHON tmp/s36/gemv_l2_bench.py tmp/s36/gemv_l2_bench.so 2>&1 | tee $OUT/l2_bench.txt
module_run llama_b1 model=llama3_1_8b dataset=random_tokens infer.max_new_tokens=64 dataset.input_len=1024 runtime.batch_size=1
echo "total $(( $(date +%s) - S0 )) s"
