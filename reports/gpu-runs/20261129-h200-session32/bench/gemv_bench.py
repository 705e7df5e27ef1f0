# One-row GEMV variants at Llama-3.1-8B's decode shapes against cuBLAS (F.linear); weights rotate
# over copies totalling > 400 MB so every call reads its weight from DRAM, as in a decode step.
import ctypes, sys, torch, torch.nn.functional as F
lib = ctypes.CDLL(sys.argv[1])
names = ["today", "u4_r4_w8", "u2_r4_w8", "u2_r8_w8", "u4_r4_w4", "u4_r2_w4", "u5_r4_w8", "u5_r2_w8"]
fns = {}
for n in names:
    f = getattr(lib, "gb_" + n); f.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 2 + [ctypes.c_void_p]; fns[n] = f
shapes = {"ocr_lm_head": (129280, 1280), "ocr_qkv": (3840, 1280), "ocr_o_proj": (1280, 1280), "ocr_shared_gu": (3584, 1280), "ocr_shared_dn": (1280, 1792), "ocr_mlp_gu": (13696, 1280), "ocr_mlp_dn": (1280, 6848), "l8b_qkv": (6144, 4096), "l8b_gate_up": (28672, 4096), "l8b_down": (4096, 14336)}
print(f"{'shape':<8} {'cublas':>8} " + " ".join(f"{n:>9}" for n in names) + "   floor@4.8TB/s us (best: % of 4.8 TB/s)")
for name, (n, k) in shapes.items():
    copies = max(2, int(400e6 // (n * k * 2)) + 1)
    ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
    x = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
    ref = F.linear(x.float(), ws[0].float())
    st = torch.cuda.current_stream().cuda_stream
    def timed(call, it=60):
        for i in range(copies): call(ws[i])
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(True), torch.cuda.Event(True)
        s.record()
        for i in range(it): call(ws[i % copies])
        e.record(); torch.cuda.synchronize()
        return s.elapsed_time(e) / it * 1000
    cols = [f"{timed(lambda w: F.linear(x, w)):8.2f}"]
    best = 1e9
    for nm in names:
        y = torch.empty(1, n, device="cuda", dtype=torch.bfloat16)
        t = timed(lambda w: fns[nm](x.data_ptr(), w.data_ptr(), y.data_ptr(), n, k, st))
        fns[nm](x.data_ptr(), ws[0].data_ptr(), y.data_ptr(), n, k, st); torch.cuda.synchronize()
        ok = (y.float() - ref).abs().max().item() <= 1e-2 * ref.abs().max().item()
        best = min(best, t)
        cols.append(f"{t:9.2f}" + ("" if ok else "!"))
    fl = n * k * 2 / 4.8e12 * 1e6
    print(f"{name:<8} " + " ".join(cols) + f"   {fl:.2f} ({fl / best * 100:.0f} %)")
