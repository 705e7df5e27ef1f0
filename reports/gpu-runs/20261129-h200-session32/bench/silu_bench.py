import ctypes, sys, torch
lib = ctypes.CDLL(sys.argv[1])
names = ["today", "u1_g8", "u2_g8", "u4_g8", "u2_g4", "u4_g4"]
fns = {}
for n in names:
    f = getattr(lib, "sb_" + n); f.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64] * 2 + [ctypes.c_void_p]; fns[n] = f
print(f"{'rows':>6} {'f':>6} " + " ".join(f"{n:>8}" for n in names) + "   floor@4.8TB/s us")
for rows, f in ((1024, 14336), (8192, 14336), (1024, 1792), (29184, 1792)):
    gu = torch.randn(rows, 2 * f, device="cuda", dtype=torch.bfloat16)
    g, u = gu[:, :f].float(), gu[:, f:].float()
    ref = ((g / (1 + torch.exp(-g))).bfloat16().float() * u).bfloat16()
    st = torch.cuda.current_stream().cuda_stream
    cols = []
    for n in names:
        o = torch.empty(rows, f, device="cuda", dtype=torch.bfloat16)
        call = lambda: fns[n](gu.data_ptr(), o.data_ptr(), rows, f, st)
        for _ in range(5): call()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(True), torch.cuda.Event(True)
        s.record()
        for _ in range(50): call()
        e.record(); torch.cuda.synchronize()
        t = s.elapsed_time(e) / 50 * 1000
        ok = (o.float() - ref.float()).abs().max().item() <= 1e-2 * ref.float().abs().max().item()
        cols.append(f"{t:8.2f}" + ("" if ok else "!"))
    print(f"{rows:>6} {f:>6} " + " ".join(cols) + f"   {rows * f * 6 / 4.8e12 * 1e6:.2f}")
