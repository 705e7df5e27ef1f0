# Session 36: the one-row GEMV with the folded add + RMSNorm, session 35's kernel (the norm in a
# prologue of every block, gemv_l2_bench.so with nothing requested ahead) against the tree's
# (the norm formed on the fly, rstd applied to the sums: gemv_fold_bench.so), alternated, at
# the decode shapes that fold a norm, with the plain GEMV at q/k/v's shape for reference; then a
# Llama-3.1-8B layer's four GEMVs in order. Weights rotated over copies that L2 cannot hold; a
# CUDA graph of the launches with programmatic dependent launch, replayed 20 times.
import ctypes, sys, torch
libs = {"s35": ctypes.CDLL(sys.argv[1]), "new": ctypes.CDLL(sys.argv[2])}
for lib in libs.values():
    lib.ab_run.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 2 + [ctypes.c_void_p] * 4
    lib.ab_set_pdl.argtypes = [ctypes.c_int]
    lib.ab_set_ahead.argtypes = [ctypes.c_int]
    assert lib.ab_set_ahead(0) == 0
PEAK = 4.8e12 if "H200" in torch.cuda.get_device_name(0) else 3.35e12
FORMS = {0: "plain", 1: "norm", 2: "norm+swiglu", 3: "swiglu"}
print(torch.cuda.get_device_name(0))

def timed(calls, k):
    x = torch.randn(k, device="cuda", dtype=torch.bfloat16)
    d = torch.randn(k, device="cuda", dtype=torch.bfloat16) * 0.5
    nw = torch.rand(k, device="cuda", dtype=torch.bfloat16) + 0.5
    s = torch.empty(k, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(max(c[1] for c in calls), device="cuda", dtype=torch.bfloat16)
    res, outs = {}, {}
    for name in ("s35", "new", "s35", "new"):
        lib = libs[name]
        f, n, kk, w = calls[0]
        lib.ab_set_pdl(0)
        assert lib.ab_run(f, x.data_ptr(), w.data_ptr(), y.data_ptr(), n, kk, d.data_ptr(), nw.data_ptr(), s.data_ptr(), torch.cuda.current_stream().cuda_stream) == 0
        torch.cuda.synchronize()
        outs[name] = y[: n // 2 if f >= 2 else n].float().clone()
        lib.ab_set_pdl(1)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            st = torch.cuda.current_stream().cuda_stream
            for f, n, kk, w in calls:
                assert lib.ab_run(f, x.data_ptr(), w.data_ptr(), y.data_ptr(), n, kk, d.data_ptr(), nw.data_ptr(), s.data_ptr(), st) == 0
        for _ in range(3): g.replay()
        torch.cuda.synchronize()
        b0, b1 = torch.cuda.Event(True), torch.cuda.Event(True)
        b0.record()
        for _ in range(20): g.replay()
        b1.record(); torch.cuda.synchronize()
        res.setdefault(name, []).append(b0.elapsed_time(b1) / 20 * 1000)
        lib.ab_set_pdl(0)
    # the first call's output against fp32 (norm forms: of the sum x + d)
    f, n, kk, w = calls[0]
    inp = x[:kk].float()
    if f in (1, 2):
        sm = (x[:kk].float() + d[:kk].float()).to(torch.bfloat16).float()
        inp = sm * torch.rsqrt(sm.pow(2).mean() + 1e-5) * nw[:kk].float()
    ref = w.float() @ inp
    if f >= 2:
        ref = torch.nn.functional.silu(ref[: n // 2]) * ref[n // 2:]
    errs = {nm: ((o - ref).pow(2).mean() / ref.pow(2).mean()).sqrt().item() for nm, o in outs.items()}
    return res, errs

def copies(n, k, nbytes_min=400e6):
    c = max(4, min(64, int(-(-nbytes_min // (n * k * 2)))))
    return [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(c)]

def shape(name, form, n, k):
    ws = copies(n, k)
    res, errs = timed([(form, n, k, w) for w in ws], k)
    mb = n * k * 2
    print(f"\n{name} ({FORMS[form]}): n {n} k {k}, {mb / 1e6:.2f} MB, floor {mb / PEAK * 1e6:.2f} us")
    for nm, r in res.items():
        per = [t / len(ws) for t in r]
        print(f"  {nm:<4} " + "  ".join(f"{t:8.2f}" for t in per) + f" us  {100 * mb / PEAK * 1e6 / min(per):.1f} % of peak  rel rms err {errs[nm]:.2e}")
    del ws; torch.cuda.empty_cache()

shape("llama qkv", 1, 6144, 4096)
shape("llama qkv", 0, 6144, 4096)
shape("llama gate_up", 2, 28672, 4096)
shape("qwen2.5-7b qkv", 1, 4608, 3584)
shape("qwen2.5-7b gate_up", 2, 37888, 3584)
shape("llama-70b qkv", 1, 10240, 8192)
shape("ocr qkv", 1, 3840, 1280)
shape("ocr dense gate_up", 2, 13696, 1280)

layers = 8
SH = ((6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336))
L = [[torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for (n, k) in SH] for _ in range(layers)]
calls = []
for ws in L:
    calls += [(1, 6144, 4096, ws[0]), (0, 4096, 4096, ws[1]), (2, 28672, 4096, ws[2]), (0, 4096, 14336, ws[3])]
res, _ = timed(calls, 14336)
mb = sum(n * k * 2 for (n, k) in SH)
print(f"\nllama layer's four GEMVs: {mb / 1e6:.1f} MB, floor {mb / PEAK * 1e6:.2f} us")
for nm, r in res.items():
    per = [t / layers for t in r]
    print(f"  {nm:<4} " + "  ".join(f"{t:8.2f}" for t in per) + f" us a layer  {100 * mb / PEAK * 1e6 / min(per):.1f} % of peak")
