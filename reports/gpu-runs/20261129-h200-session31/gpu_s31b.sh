#!/usr/bin/env bash
# Session 31 call B: L2 prefetch of the next projection's weight from the norm before it
# (scripts/bench_l2_prefetch.py), and the DRAM read ceiling.
set -uo pipefail
nvidia-smi --query-gpu=name --format=csv,noheader
/opt/torch/.venv/bin/python scripts/bench_l2_prefetch.py .carry/libl2bench.so --out "$OUT/l2_prefetch.json" 2>&1 | tee "$OUT/l2_prefetch.txt"
