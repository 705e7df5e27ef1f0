# Session 36: the one-row GEMV with 0, 1, 2 or all remaining groups of its rows requested into
# L2 before its wait (gemv_l2_bench.cu), at Llama-3.1-8B's, Qwen2.5-7B's and Llama-3.1-70B's
# decode shapes in the forms the decoder launches; then a Llama-3.1-8B layer's four GEMVs in
# order (q/k/v with the norm, o_proj, gate/up with the norm and SwiGLU, down). Weights rotated
# over copies that L2 cannot hold; a CUDA graph of the launches with programmatic dependent
# launch, replayed 20 times; µs a launch (a layer), alternated twice.
import ctypes, sys, torch
lib = ctypes.CDLL(sys.argv[1])
lib.ab_run.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 2 + [ctypes.c_void_p] * 4
lib.ab_set_pdl.argtypes = [ctypes.c_int]
lib.ab_set_ahead.argtypes = [ctypes.c_int]
PEAK = 4.8e12 if "H200" in torch.cuda.get_device_name(0) else 3.35e12
FORMS = {0: "plain", 1: "norm", 2: "norm+swiglu", 3: "swiglu"}
AHEAD = (0, 1, 2, 99)
print(torch.cuda.get_device_name(0))

def timed(calls):
    """calls: list of (form, n, k, w) launched in order; returns µs for the whole list."""
    kmax = max(c[2] for c in calls); nmax = max(c[1] for c in calls)
    x = torch.randn(kmax, device="cuda", dtype=torch.bfloat16)
    d = torch.randn(kmax, device="cuda", dtype=torch.bfloat16)
    nw = torch.rand(kmax, device="cuda", dtype=torch.bfloat16) + 0.5
    s = torch.empty(kmax, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(nmax, device="cuda", dtype=torch.bfloat16)
    res = {}
    for a in AHEAD + AHEAD:
        assert lib.ab_set_ahead(a) == 0
        lib.ab_set_pdl(1)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            st = torch.cuda.current_stream().cuda_stream
            for f, n, k, w in calls:
                e = lib.ab_run(f, x.data_ptr(), w.data_ptr(), y.data_ptr(), n, k, d.data_ptr(), nw.data_ptr(), s.data_ptr(), st)
                assert e == 0, e
        for _ in range(3): g.replay()
        torch.cuda.synchronize()
        b0, b1 = torch.cuda.Event(True), torch.cuda.Event(True)
        b0.record()
        for _ in range(20): g.replay()
        b1.record(); torch.cuda.synchronize()
        res.setdefault(a, []).append(b0.elapsed_time(b1) / 20 * 1000)
    lib.ab_set_pdl(0)
    return res

def copies(n, k, nbytes_min=400e6):
    c = max(4, min(64, int(-(-nbytes_min // (n * k * 2)))))
    return [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(c)]

def shape(name, form, n, k):
    ws = copies(n, k)
    res = timed([(form, n, k, w) for w in ws])
    mb = n * k * 2
    print(f"\n{name} ({FORMS[form]}): n {n} k {k}, {mb / 1e6:.2f} MB, floor {mb / PEAK * 1e6:.2f} us")
    for a, r in res.items():
        per = [t / len(ws) for t in r]
        print(f"  ahead {a:>2}  " + "  ".join(f"{t:8.2f}" for t in per) + f" us  {100 * mb / PEAK * 1e6 / min(per):.1f} % of peak")
    del ws; torch.cuda.empty_cache()

shape("llama qkv", 1, 6144, 4096)
shape("llama qkv", 0, 6144, 4096)
shape("llama o_proj", 0, 4096, 4096)
shape("llama gate_up", 2, 28672, 4096)
shape("llama gate_up", 3, 28672, 4096)
shape("llama down", 0, 4096, 14336)
shape("qwen2.5-7b qkv", 1, 4608, 3584)
shape("qwen2.5-7b down", 0, 3584, 18944)
shape("llama-70b qkv", 1, 10240, 8192)
shape("llama-70b o_proj", 0, 8192, 8192)

layers = 8
L = [[torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for (n, k) in ((6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336))] for _ in range(layers)]
calls = []
for ws in L:
    calls += [(1, 6144, 4096, ws[0]), (0, 4096, 4096, ws[1]), (2, 28672, 4096, ws[2]), (0, 4096, 14336, ws[3])]
res = timed(calls)
mb = sum(n * k * 2 for (n, k) in ((6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)))
print(f"\nllama layer's four GEMVs: {mb / 1e6:.1f} MB, floor {mb / PEAK * 1e6:.2f} us")
for a, r in res.items():
    per = [t / layers for t in r]
    print(f"  ahead {a:>2}  " + "  ".join(f"{t:8.2f}" for t in per) + f" us a layer  {100 * mb / PEAK * 1e6 / min(per):.1f} % of peak")
