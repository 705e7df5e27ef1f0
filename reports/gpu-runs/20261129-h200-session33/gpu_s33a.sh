#!/usr/bin/env bash
# Session 33 call A (#44): decode attention's split-pass variants (pipeline stages, the cluster
# combine, early requests of the cached rows) in a microbenchmark (bench/attn_bench.cu, .py).
S0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 400 /opt/torch/.venv/bin/python .carry/s33/attn_bench.py .carry/s33/libattn_bench.so > $OUT/attn_bench.txt 2>&1; echo "rc=$?"
cat $OUT/attn_bench.txt
echo "total $(( $(date +%s) - S0 )) s"
