#!/usr/bin/env bash
# Session 36 call A: (1) session 35's last gemv.cu edits, never run on a GPU: the GEMV GPU tests
# (the SwiGLU forms' new shapes) and debug fast-path on Llama-3.1-8B and every family ("full");
# (2) the L2-ahead microbenchmark (tmp/s36/gemv_l2_bench.*); (3) Llama-3.1-8B batch 1's decode
# step by module at HEAD.
source scripts/device_lib.sh
lib_tests kernels_gemv
fast_path "gemv_swiglu" llama3_1_8b full
timeout 200 $PYTHON tmp/s36/gemv_l2_bench.py tmp/s36/gemv_l2_bench.so 2>&1 | tee $OUT/l2_bench.txt
module_run llama_b1 model=llama3_1_8b dataset=random_tokens infer.max_new_tokens=64 dataset.input_len=1024 runtime.batch_size=1
echo "total $(( $(date +%s) - S0 )) s"
