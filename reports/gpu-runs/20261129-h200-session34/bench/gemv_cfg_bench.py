# Session 34: the tree's one-row GEMV in each load-loop configuration (gemv_cfg_bench.cu) at
# DeepSeek-OCR's and Llama-3.1-8B's decode shapes, in the form the decoder launches each with.
# Weights rotated over enough copies that L2 holds none between uses; a CUDA graph of the copies'
# launches with programmatic dependent launch, replayed 20 times; µs a launch and the rate.
import ctypes, sys, torch
lib = ctypes.CDLL(sys.argv[1])
lib.ab_run.argtypes = [ctypes.c_int] * 2 + [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 2 + [ctypes.c_void_p, ctypes.c_int, ctypes.c_int] + [ctypes.c_void_p] * 4
lib.ab_set_pdl.argtypes = [ctypes.c_int]
CFG = {0: "U4", 1: "U4 partial", 2: "U8", 3: "U8 partial"}
FORM = {0: "plain", 1: "norm", 2: "grouped", 3: "short"}
PEAK = 4.8e12 if "H200" in torch.cuda.get_device_name(0) else 3.35e12

def bench(name, form, n, k, slots=0, experts=0):
    grouped = form == 2
    read = (slots if grouped else 1) * n * k * 2
    layers = max(4, min(64, -(-400_000_000 // read)))
    ws = [torch.randn(experts if grouped else 1, n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(layers)]
    x = torch.randn(max(slots, 1), k, device="cuda", dtype=torch.bfloat16)
    delta = torch.randn(k, device="cuda", dtype=torch.bfloat16)
    nw = torch.rand(k, device="cuda", dtype=torch.bfloat16) + 0.5
    total = torch.empty(k, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(max(slots, 1), n, device="cuda", dtype=torch.bfloat16)
    if grouped:
        chosen = sorted((3 + 8 * s) % experts for s in range(slots))
        counts = torch.zeros(experts, dtype=torch.int32)
        for e in chosen: counts[e] += 1
        ge = torch.cumsum(counts, 0).to(torch.int32).cuda()
        ref = torch.stack([ws[0][e].float() @ x[s].float() for s, e in enumerate(chosen)])
    else:
        ge = torch.zeros(1, dtype=torch.int32, device="cuda")
        inp = x[0].float()
        if form == 1:
            s_ = x[0].float() + delta.float()
            inp = (s_ * torch.rsqrt(s_.pow(2).mean() + 1e-6)).to(torch.bfloat16).float() * nw.float()
        ref = (ws[0][0].float() @ inp)[None]
    st = torch.cuda.current_stream().cuda_stream
    res = {}
    for cfg in (0, 1, 2, 3, 0, 1, 2, 3):
        args = lambda i, s: (form, cfg, x.data_ptr(), ws[i].data_ptr(), y.data_ptr(), n, k, ge.data_ptr(), slots, experts, delta.data_ptr(), nw.data_ptr(), total.data_ptr(), s)
        lib.ab_set_pdl(0)
        e = lib.ab_run(*args(0, st))
        torch.cuda.synchronize()
        if e != 0:
            res.setdefault(cfg, []).append(None); continue
        err = ((y.float() - ref).abs().max() / ref.abs().max()).item()
        lib.ab_set_pdl(1)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            s2 = torch.cuda.current_stream().cuda_stream
            for i in range(layers): lib.ab_run(*args(i, s2))
        for _ in range(3): g.replay()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        for _ in range(20): g.replay()
        b.record(); torch.cuda.synchronize()
        res.setdefault(cfg, []).append((err, a.elapsed_time(b) / 20 / layers * 1000))
    lib.ab_set_pdl(0)
    print(f"\n{name} ({FORM[form]}): n {n} k {k}" + (f", {slots} slots of {experts} experts" if grouped else "") + f", {read / 1e6:.2f} MB, floor {read / PEAK * 1e6:.2f} us")
    for cfg, runs in res.items():
        if None in runs: print(f"  {CFG[cfg]:<11} launch error"); continue
        us = min(r[1] for r in runs)
        print(f"  {CFG[cfg]:<11} rel err {max(r[0] for r in runs):.1e} " + " ".join(f"{r[1]:7.2f}" for r in runs) + f" us  best {100 * read / us / 1e-6 / PEAK:5.1f} %")
    del ws
    torch.cuda.empty_cache()

print(torch.cuda.get_device_name(0))
bench("ocr qkv", 1, 3840, 1280)
bench("ocr o_proj", 0, 1280, 1280)
bench("ocr experts gate_up", 2, 1792, 1280, 8, 66)
bench("ocr experts down", 2, 1280, 896, 8, 66)
bench("ocr experts gate_up b2", 2, 1792, 1280, 16, 66)
bench("ocr experts down b2", 2, 1280, 896, 16, 66)
bench("ocr lm_head", 3, 129280, 1280)
bench("llama qkv", 1, 6144, 4096)
bench("llama o_proj", 0, 4096, 4096)
bench("llama gate_up", 1, 28672, 4096)
bench("llama down", 0, 4096, 14336)
bench("llama lm_head", 0, 128256, 4096)
bench("qwen2.5-7b o_proj", 0, 3584, 3584)
bench("qwen2.5-7b down", 0, 3584, 18944)
