#!/usr/bin/env bash
# Session 31 call A: the few-rows Hopper GEMM alone against cuBLAS (scripts/bench_linear_few_rows.py).
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
/opt/torch/.venv/bin/python scripts/bench_linear_few_rows.py .carry/libfewrows.so \
  --out "$OUT/fewrows.json" > "$OUT/fewrows.txt" 2>&1
rc=$?
sed -n '/^shape .*best kernel/,$p' "$OUT/fewrows.txt"
[ $rc -eq 0 ] || tail -30 "$OUT/fewrows.txt"
echo "rc $rc"
