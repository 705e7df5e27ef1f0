# Session 34: the one-row GEMV (gemv_bench.cu) at DeepSeek-OCR's and Llama-3.1-8B's decode shapes,
# HEAD against load-loop variants. Each shape's weights are rotated over enough copies that L2
# (50 MB) holds none between uses; one CUDA graph of `layers` launches with programmatic
# dependent launch, replayed 20 times. Prints µs a launch and the weight bytes' rate.
# Call A/B ran every variant of the first library; with VARIANTS=0 and two libraries (the tree
# before and after) it compares their kernels (variant 0), alternating.
import ctypes, os, sys, torch
LIBS = [ctypes.CDLL(p) for p in sys.argv[1:]]
VARIANTS = [int(v) for v in os.environ.get("VARIANTS", "0,1,2,3,4,5,6,0").split(",")]
for lib in LIBS:
    lib.ab_run.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 2 + [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    lib.ab_set_pdl.argtypes = [ctypes.c_int]
NAMES = {0: "HEAD", 1: "U4 pred", 2: "U4 pipe", 3: "U8 pred", 4: "U2 pipe", 5: "U4 pipe early", 6: "U8 early"}
PEAK = 4.8e12 if "H200" in torch.cuda.get_device_name(0) else 3.35e12

def bench(name, n, k, slots=0, experts=0):
    grouped = slots > 0
    short = int(not grouped and k <= 2048 and n >= 8192)
    per_layer = (experts if grouped else 1) * n * k * 2
    read = (slots if grouped else 1) * n * k * 2
    layers = max(4, min(64, -(-400_000_000 // read)))
    ws = [torch.randn(experts if grouped else 1, n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(layers)]
    x = torch.randn(max(slots, 1), k, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(max(slots, 1), n, device="cuda", dtype=torch.bfloat16)
    if grouped:  # slots spread over experts 3, 11, 19, ... (one slot each), sorted
        chosen = [(3 + 8 * s) % experts for s in range(slots)]
        counts = torch.zeros(experts, dtype=torch.int32)
        for e in chosen: counts[e] += 1
        ge = torch.cumsum(counts, 0).to(torch.int32).cuda()
        order = sorted(chosen)
        ref = torch.stack([ws[0][e].float() @ x[s].float() for s, e in enumerate(order)])
    else:
        ge = torch.zeros(1, dtype=torch.int32, device="cuda")
        ref = (ws[0][0].float() @ x[0].float())[None]
    st = torch.cuda.current_stream().cuda_stream
    out = []
    runs = [(li, v) for v in VARIANTS for li in range(len(LIBS)) if v == 0 or li == 0]
    for li, var in runs + runs[:2]:
        lib = LIBS[li]
        if var >= 5 and not grouped: continue
        lib.ab_set_pdl(0)
        e = lib.ab_run(var, int(grouped), short, x.data_ptr(), ws[0].data_ptr(), y.data_ptr(), n, k, ge.data_ptr(), slots, experts, st)
        torch.cuda.synchronize()
        if e != 0:
            out.append(f"  lib{li} {NAMES[var]:<14} err {e}"); continue
        err = ((y.float() - ref).abs().max() / ref.abs().max()).item()
        lib.ab_set_pdl(1)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            s2 = torch.cuda.current_stream().cuda_stream
            for i in range(layers):
                lib.ab_run(var, int(grouped), short, x.data_ptr(), ws[i].data_ptr(), y.data_ptr(), n, k, ge.data_ptr(), slots, experts, s2)
        for _ in range(3): g.replay()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        for _ in range(20): g.replay()
        b.record(); torch.cuda.synchronize()
        us = a.elapsed_time(b) / 20 / layers * 1000
        out.append(f"  lib{li} {NAMES[var]:<14} rel err {err:.1e} {us:8.2f} us {read / us / 1e3:7.0f} GB/s {100 * read / us / 1e-6 / PEAK:5.1f} %")
    for lib in LIBS: lib.ab_set_pdl(0)
    print(f"\n{name}: n {n} k {k}" + (f" grouped {slots} slots of {experts} experts" if grouped else "") + f", {read / 1e6:.2f} MB read, floor {read / PEAK * 1e6:.2f} us, {layers} copies")
    print("\n".join(out))
    del ws
    torch.cuda.empty_cache()

print(torch.cuda.get_device_name(0))
bench("ocr qkv", 3840, 1280)
bench("ocr o_proj", 1280, 1280)
bench("ocr experts gate_up", 1792, 1280, 8, 66)
bench("ocr experts down", 1280, 896, 8, 66)
bench("ocr lm_head", 129280, 1280)
bench("llama qkv", 6144, 4096)
bench("llama o_proj", 4096, 4096)
bench("llama gate_up", 28672, 4096)
bench("llama down", 4096, 14336)
bench("llama lm_head", 128256, 4096)
