#!/usr/bin/env bash
# Builds the few-rows Hopper GEMM (src/worker/csrc/kernels/sm90a/linear_few_rows.cu) alone into
# a shared object for scripts/bench_linear_few_rows.py, with the nvcc and CUTLASS headers that
# ./bootstrap.sh installs into .venv (the worker's build compiles the same file: build_kernels.rs).
# usage: scripts/build_linear_few_rows.sh [OUT.so]   (about a minute per tile variant on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
site=$(echo .venv/lib/python3*/site-packages)
cutlass="$site/cutlass_library/source"
cuda="$site/nvidia/cu13"
out=${1:-target/linear_few_rows/liblinear_few_rows.so}
mkdir -p "$(dirname "$out")"
"$cuda/bin/nvcc" -O3 -std=c++17 -Xcompiler -fPIC -shared -DNDEBUG --expt-relaxed-constexpr \
  -I"$cutlass/include" -I"$cutlass/tools/util/include" -L"$cuda/lib" \
  -gencode arch=compute_90a,code=sm_90a \
  src/worker/csrc/kernels/sm90a/linear_few_rows.cu -o "$out"
echo "$out"
