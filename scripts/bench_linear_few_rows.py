#!/usr/bin/env python3
"""The few-rows Hopper GEMM (src/worker/csrc/kernels/sm90a/linear_few_rows.cu) against cuBLAS
(torch's Linear) on a decode step's projections: every tile variant and schedule, each shape's
time per call, achieved bandwidth and fraction of the DRAM floor.

usage: bench_linear_few_rows.py LIB [--rows 8,16,32,64,128] [--shapes llama3_1_8b] [--out FILE]

LIB is a shared object with llmprof_k_sm90_linear_few_rows (the worker's libllmprof_shim.so or
the kernel built alone: scripts/build_linear_few_rows.sh). Each measurement replays a CUDA graph
of calls that cycle through enough copies of the weight to overflow the L2 cache (weights are
read from DRAM as in a model's step), 5 replays after a warm-up, median per call. The floor is
the operands' bytes at the datasheet DRAM bandwidth (--peak-gbs, default H200's 4,800 GB/s;
H100 SXM 3,350).
"""
import argparse
import ctypes
import json
import math
import statistics

import torch

SHAPES = {
    # (name, n, k): Llama-3.1-8B's decode-step projections, q/k/v and gate/up fused as llmprof runs them.
    "llama3_1_8b": [("qkv", 6144, 4096), ("o_proj", 4096, 4096), ("gate_up", 28672, 4096),
                    ("down", 4096, 14336)],
}
VARIANTS = {0: "128x32x64", 1: "128x64x64", 2: "128x128x64", 3: "128x32x128", 4: "128x64x128",
            5: "128x128x128"}
# (decomposition, splits): CUTLASS's heuristic, data-parallel, split-K 2/4/8, stream-K.
SCHEDULES = [(0, 1), (1, 1), (2, 2), (2, 4), (2, 8), (3, 1)]
SCHEDULE_NAMES = {0: "heuristic", 1: "data-parallel", 2: "split-k", 3: "stream-k"}
L2_BYTES = 50 * 2**20  # H100 and H200: 50 MiB


def load(lib_path):
    lib = ctypes.CDLL(lib_path)
    lib.llmprof_k_sm90_linear_few_rows_workspace.restype = ctypes.c_int64
    lib.llmprof_k_sm90_linear_few_rows_workspace.argtypes = [ctypes.c_int64] * 3 + [ctypes.c_int] * 3
    lib.llmprof_k_sm90_linear_few_rows.restype = ctypes.c_int
    lib.llmprof_k_sm90_linear_few_rows.argtypes = (
        [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 3 + [ctypes.c_void_p] * 2 + [ctypes.c_int] * 3)
    return lib


def timed(fn_per_weight, weights, replays=5):
    """Median µs per call of a CUDA graph that calls fn_per_weight(w) for every w in weights."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for w in weights[:2]:
            fn_per_weight(w)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for w in weights:
            fn_per_weight(w)
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / len(weights))
    return statistics.median(times)


def print_best(results):
    """Per shape and row count: cuBLAS against the fastest variant and schedule."""
    print(f"\n{'shape':8} {'m':>4} {'cublas us':>9} {'floor%':>7} | {'best kernel':28} {'us':>8} {'floor%':>7} {'speedup':>7}")
    keys = sorted({(r["shape"], r["m"]) for r in results}, key=lambda t: (t[0], t[1]))
    for shape, m in keys:
        rows = [r for r in results if r["shape"] == shape and r["m"] == m]
        cublas = next(r for r in rows if r["kernel"] == "cublas")
        ours = [r for r in rows if r["kernel"] != "cublas"]
        if not ours:
            continue
        best = min(ours, key=lambda r: r["us"])
        print(f"{shape:8} {m:4} {cublas['us']:9.2f} {cublas['floor_pct']:6.1f}% | {best['kernel']:28} "
              f"{best['us']:8.2f} {best['floor_pct']:6.1f}% {cublas['us'] / best['us']:6.2f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--rows", default="8,16,32,64,128")
    ap.add_argument("--shapes", default="llama3_1_8b")
    ap.add_argument("--variants", default=",".join(str(v) for v in VARIANTS))
    ap.add_argument("--peak-gbs", type=float, default=4800.0)
    ap.add_argument("--out")
    args = ap.parse_args()
    lib = load(args.lib)
    dev = torch.device("cuda")
    torch.manual_seed(0)
    rows = [int(r) for r in args.rows.split(",")]
    variants = [int(v) for v in args.variants.split(",")]
    results = []
    print(f"{'shape':8} {'m':>4} {'kernel':28} {'us':>8} {'GB/s':>7} {'floor%':>7}")
    for name, n, k in SHAPES[args.shapes]:
        wbytes = n * k * 2
        copies = max(2, math.ceil(3 * L2_BYTES / wbytes))
        weights = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) / math.sqrt(k)
                   for _ in range(copies)]
        for m in rows:
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            y = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            want = (x.float() @ weights[0].float().t())
            scale = want.abs().max().item()
            nbytes = wbytes + m * k * 2 + m * n * 2
            floor_us = nbytes / (args.peak_gbs * 1e3)

            def report(kernel, us, err=None):
                gbs = nbytes / (us * 1e3)
                row = {"shape": name, "n": n, "k": k, "m": m, "kernel": kernel, "us": round(us, 2),
                       "gbs": round(gbs, 1), "floor_pct": round(100 * floor_us / us, 1)}
                if err is not None:
                    row["max_err_rel"] = err
                results.append(row)
                print(f"{name:8} {m:4} {kernel:28} {us:8.2f} {gbs:7.0f} {row['floor_pct']:6.1f}%"
                      + (f"  err {err:.1e}" if err is not None else ""))

            us = timed(lambda w: torch.mm(x, w.t(), out=y), weights)
            report("cublas", us)
            for v in variants:
                for dec, splits in SCHEDULES:
                    ws_bytes = lib.llmprof_k_sm90_linear_few_rows_workspace(m, n, k, v, dec, splits)
                    if ws_bytes < 0:
                        continue
                    ws = torch.zeros(max(ws_bytes, 16), device=dev, dtype=torch.uint8)

                    def call(w, v=v, dec=dec, splits=splits, ws=ws):
                        rc = lib.llmprof_k_sm90_linear_few_rows(
                            x.data_ptr(), w.data_ptr(), None, y.data_ptr(), m, n, k, ws.data_ptr(),
                            torch.cuda.current_stream().cuda_stream, v, dec, splits)
                        if rc != 0:
                            raise RuntimeError(f"variant {v} schedule {dec}/{splits}: rc {rc}")

                    call(weights[0])
                    torch.cuda.synchronize()
                    err = ((y.float() - want).abs().max().item()) / scale
                    us = timed(call, weights)
                    label = f"{VARIANTS[v]} {SCHEDULE_NAMES[dec]}" + (f"/{splits}" if dec == 2 else "")
                    report(label, us, err)
        del weights
        torch.cuda.empty_cache()
    print_best(results)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "peak_gbs": args.peak_gbs,
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
