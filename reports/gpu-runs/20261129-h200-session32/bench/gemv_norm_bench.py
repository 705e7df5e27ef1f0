# add + RMSNorm then the one-row GEMV: two kernels against one (the norm in each block's
# prologue), and the GEMV alone; weights rotate over > 400 MB (from DRAM, as in a decode step).
import ctypes, sys, torch
lib = ctypes.CDLL(sys.argv[1])
names = ["gemv_only", "two_kernels", "fused"]
fns = {}
for n in names:
    f = getattr(lib, "gn_" + n); f.argtypes = [ctypes.c_void_p] * 7 + [ctypes.c_int64] * 2 + [ctypes.c_void_p]; fns[n] = f
print(f"{'shape':<14} " + " ".join(f"{n:>12}" for n in names) + "   fused - gemv_only, us   same y and sum as two kernels")
for name, (n, k) in {"l8b_qkv": (6144, 4096), "l8b_gate_up": (28672, 4096), "ocr_qkv": (3840, 1280), "q25_0.5b_qkv": (1152, 896)}.items():
    copies = max(2, int(400e6 // (n * k * 2)) + 1)
    ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
    x = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
    d = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
    nw = torch.rand(k, device="cuda", dtype=torch.bfloat16) + 0.5
    st = torch.cuda.current_stream().cuda_stream
    outs = {}
    times = {}
    for nm in names:
        s_, nd, y = torch.empty_like(x), torch.empty_like(x), torch.empty(1, n, device="cuda", dtype=torch.bfloat16)
        if nm == "gemv_only":
            llmprof_norm = fns["two_kernels"]; llmprof_norm(x.data_ptr(), d.data_ptr(), nw.data_ptr(), s_.data_ptr(), nd.data_ptr(), ws[0].data_ptr(), y.data_ptr(), n, k, st)
        call = lambda w: fns[nm](x.data_ptr(), d.data_ptr(), nw.data_ptr(), s_.data_ptr(), nd.data_ptr(), w.data_ptr(), y.data_ptr(), n, k, st)
        for i in range(copies): call(ws[i])
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(True), torch.cuda.Event(True)]
        ev[0].record()
        for i in range(60): call(ws[i % copies])
        ev[1].record(); torch.cuda.synchronize()
        times[nm] = ev[0].elapsed_time(ev[1]) / 60 * 1000
        call(ws[0]); torch.cuda.synchronize()
        outs[nm] = (y.clone(), s_.clone())
    same = torch.equal(outs["fused"][0], outs["two_kernels"][0]) and torch.equal(outs["fused"][1], outs["two_kernels"][1])
    print(f"{name:<14} " + " ".join(f"{times[m]:12.2f}" for m in names) + f"   {times['fused'] - times['gemv_only']:+.2f}   {same}")
