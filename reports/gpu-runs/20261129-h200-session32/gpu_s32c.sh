#!/usr/bin/env bash
# Session 32 call C (#44): microbenchmarks of the one-row GEMV at DeepSeek-OCR's short rows
# (k 1,280-6,848) with more rows a warp, and of SwiGLU's vector kernel with several vectors a
# thread at prefill sizes; Llama-3.1-8B batch 32 by module (is call B's 2 % the machine?).
source scripts/device_lib.sh
timeout 120 $PYTHON .carry/s32/gemv_bench.py .carry/s32/libgemv_bench.so > $OUT/gemv_bench.txt 2>&1; echo "gemv rc=$?"; cat $OUT/gemv_bench.txt
timeout 120 $PYTHON .carry/s32/silu_bench.py .carry/s32/libsilu_bench.so > $OUT/silu_bench.txt 2>&1; echo "silu rc=$?"; cat $OUT/silu_bench.txt
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
module_run llama_b32 $LL runtime.batch_size=32
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
echo "total $(( $(date +%s) - S0 )) s"
