#!/usr/bin/env bash
# Session 36 call G: after the review, the grouped GEMV's GPU tests with the wide layout over 70
# experts (experts on each side of 32 and 64, a repeat, the last), and the GEMV, decode-attention
# and RoPE GPU tests at the final commit.
source scripts/device_lib.sh
timeout 150 .carry/lib-tests --ignored --test-threads=1 kernels_gemv decode_attention rope > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
echo "total $(( $(date +%s) - S0 )) s"
