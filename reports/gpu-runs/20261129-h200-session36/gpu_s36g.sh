#!/usr/bin/env bash
# Session 36 call G: after the review, the grouped GEMV's GPU tests with the wide layout over 70
# experts (experts on each side of 32 and 64, a repeat, the last), and the GEMV, decode-attention
# and RoPE GPU tests at the final commit.
source scripts/device_lib.sh
lib_tests kernels_gemv decode_attention rope
echo "total $(( $(date +%s) - S0 )) s"
