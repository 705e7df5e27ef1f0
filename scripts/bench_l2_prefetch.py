#!/usr/bin/env python3
"""Does prefetching a projection's weight into L2 from the short kernel before it shorten the
pair? A decode step's RMSNorm (scripts/bench/l2_prefetch_bench.cu, with the worker's
l2_prefetch.cuh) followed by cuBLAS's GEMM on Llama-3.1-8B's projection shapes, the norm asking
L2 for the first PF bytes of the GEMM's weight from B blocks; and the DRAM read ceiling of a plain
streaming kernel on this GPU.

usage: bench_l2_prefetch.py LIB [--rows 1,32,128] [--out FILE]
LIB: the bench kernels, built with .venv's nvcc:
  nvcc -O3 -std=c++17 -Xcompiler -fPIC -shared -L<nvidia/cu13/lib> -gencode arch=compute_90,code=sm_90
       scripts/bench/l2_prefetch_bench.cu -o libl2bench.so Each measurement replays a
CUDA graph of (norm, GEMM) pairs cycling through copies of the weight that overflow L2, 5
replays after a warm-up, median per pair.
"""
import argparse
import ctypes
import json
import math
import statistics

import torch

SHAPES = [("qkv", 6144, 4096), ("o_proj", 4096, 4096), ("gate_up", 28672, 4096),
          ("down", 4096, 14336)]
# (prefetch MiB, blocks)
PREFETCH = [(0, 0), (4, 132), (16, 132), (48, 132)]
L2_BYTES = 50 * 2**20


def timed(step, count, replays=5):
    """Median µs per step(i) of a CUDA graph that runs step(0 .. count-1)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(min(2, count)):
            step(i)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(count):
            step(i)
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / count)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--rows", default="1,32,128")
    ap.add_argument("--out")
    args = ap.parse_args()
    lib = ctypes.CDLL(args.lib)
    lib.bench_norm_prefetch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                        ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64,
                                        ctypes.c_int, ctypes.c_void_p]
    lib.bench_read_all.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p,
                                   ctypes.c_int, ctypes.c_void_p]
    dev = torch.device("cuda")
    stream = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
    out = {"gpu": torch.cuda.get_device_name(), "read": [], "pairs": []}

    big = torch.empty(2**31, device=dev, dtype=torch.uint8).random_()
    sink = torch.zeros(132 * 64, device=dev, dtype=torch.int32)
    for blocks in (132 * 2, 132 * 4, 132 * 8, 132 * 16):
        us = timed(lambda i, b=blocks: lib.bench_read_all(big.data_ptr(), big.numel(),
                                                          sink.data_ptr(), b, stream()), 4)
        gbs = big.numel() / (us * 1e3)
        out["read"].append({"blocks": blocks, "us": round(us, 1), "gbs": round(gbs)})
        print(f"read ceiling, {blocks} blocks of 512: {gbs:.0f} GB/s")
    del big
    torch.cuda.empty_cache()

    rows = [int(r) for r in args.rows.split(",")]
    print(f"\n{'shape':8} {'m':>4} {'norm us':>8} {'gemm us':>8} {'gemm L2':>8} | "
          + " ".join(f"{f'{mb}M/{b}':>9}" for mb, b in PREFETCH))
    for name, n, k in SHAPES:
        copies = max(2, math.ceil(3 * L2_BYTES / (n * k * 2)))
        weights = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
        for m in rows:
            xin = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            x = torch.empty_like(xin)
            y = torch.empty(m, n, device=dev, dtype=torch.bfloat16)

            def norm(w, mb, blocks):
                rc = lib.bench_norm_prefetch(xin.data_ptr(), x.data_ptr(), m, k,
                                             w.data_ptr() if mb else None,
                                             min(mb * 2**20, w.numel() * 2), blocks, stream())
                assert rc == 0, rc

            norm_us = timed(lambda i: norm(weights[i], 0, 0), copies)
            gemm_us = timed(lambda i: torch.mm(x, weights[i].t(), out=y), copies)
            # The same weight every time: from L2 where it fits (50 MiB), the GEMM's own limit.
            gemm_l2_us = timed(lambda i: torch.mm(x, weights[0].t(), out=y), 8)
            cells = []
            for mb, blocks in PREFETCH:
                def pair(i, mb=mb, blocks=blocks):
                    norm(weights[i], mb, blocks)
                    torch.mm(x, weights[i].t(), out=y)
                us = timed(pair, copies)
                cells.append(us)
                out["pairs"].append({"shape": name, "n": n, "k": k, "m": m, "prefetch_mib": mb,
                                     "blocks": blocks, "pair_us": round(us, 2),
                                     "norm_us": round(norm_us, 2), "gemm_us": round(gemm_us, 2),
                                     "gemm_l2_us": round(gemm_l2_us, 2)})
            print(f"{name:8} {m:4} {norm_us:8.2f} {gemm_us:8.2f} {gemm_l2_us:8.2f} | "
                  + " ".join(f"{c:9.2f}" for c in cells))
        del weights
        torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
