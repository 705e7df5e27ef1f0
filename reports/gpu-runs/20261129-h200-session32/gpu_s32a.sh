#!/usr/bin/env bash
# Session 32 call A: (1) the GEMV's GPU tests after a6e3c7d's refactor (plain and grouped, both
# launch policies); (2) prefill attention with GQA: K/V repeated per group (today) against SDPA's
# enable_gqa per backend (.carry/s32/sdpa_gqa.py); (3) add + RMSNorm kernels at prefill row counts
# (.carry/s32/norm_bench.py over a standalone build of add_rms_norm.cu's kernels); (4) the
# one-row GEMV variants (unroll, rows per warp) at Llama-3.1-8B's decode shapes against cuBLAS
# (.carry/s32/gemv_bench.py); (5) where a Llama-3.1-8B prefill's 1.5 ms of idle GPU time goes: analyze trace over its stage-1 trace.
source scripts/device_lib.sh
timeout 120 .carry/lib-tests --ignored --test-threads=1 gemv > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -4
timeout 120 $PYTHON .carry/s32/sdpa_gqa.py > $OUT/sdpa_gqa.txt 2>&1; echo "sdpa rc=$?"; cat $OUT/sdpa_gqa.txt
timeout 120 $PYTHON .carry/s32/norm_bench.py .carry/s32/libnorm_bench.so > $OUT/norm_bench.txt 2>&1; echo "norm rc=$?"; cat $OUT/norm_bench.txt
timeout 120 $PYTHON .carry/s32/gemv_bench.py .carry/s32/libgemv_bench.so > $OUT/gemv_bench.txt 2>&1; echo "gemv rc=$?"; cat $OUT/gemv_bench.txt
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
s=$(date +%s); timeout 200 $L stage1 $LL runtime.batch_size=1 hydra.run.dir=$OUT/llama_b1 > $OUT/llama_b1.out 2>&1
echo "stage1 llama b1 rc=$? $(( $(date +%s) - s )) s"
timeout 60 $L analyze trace $OUT/llama_b1/trace.json --regions 'prefill,decode*' > $OUT/llama_b1_trace.md 2> $OUT/llama_b1_trace.err
echo "analyze rc=$?"; grep -i -A12 "idle" $OUT/llama_b1_trace.md | head -60
cp $OUT/llama_b1/modules.md $OUT/llama_b1.modules.md; rm -rf $OUT/llama_b1
echo "total $(( $(date +%s) - S0 )) s"
