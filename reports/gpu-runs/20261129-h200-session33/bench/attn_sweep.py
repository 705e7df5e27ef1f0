# Session 33: decode attention variants (attn_bench.cu) over 32 layers' KV caches (more than L2
# holds), captured in a CUDA graph, with and without programmatic dependent launch. Prints µs a
# layer (split + combine where there is one) and the KV bytes' rate.
import ctypes, math, sys, torch
lib = ctypes.CDLL(sys.argv[1])
lib.ab_run.argtypes = [ctypes.c_int] * 2 + [ctypes.c_void_p] * 8 + [ctypes.c_int] * 3 + [ctypes.c_int64, ctypes.c_int, ctypes.c_void_p]
lib.ab_set_pdl.argtypes = [ctypes.c_int]
SM = torch.cuda.get_device_properties(0).multi_processor_count
NAMES = {0: "today", 1: "S3", 2: "S4", 3: "cluster", 4: "cl+early", 5: "early", 6: "S3 cl", 7: "S3 cl+e"}

def plan(batch, kv, splits):
    want = -(-2 * 3 * SM // (batch * kv))
    return max(1, min(splits, max(2, want)))

def reference(q, k, v, pad, last):
    b, h, d = q.shape
    g = h // k.shape[1]
    out = torch.empty(b, h, d, device=q.device)
    for r in range(b):
        kk = k[r, :, pad[r]:last + 1].float().repeat_interleave(g, 0)
        vv = v[r, :, pad[r]:last + 1].float().repeat_interleave(g, 0)
        p = torch.softmax((q[r].float()[:, None, :] @ kk.transpose(1, 2))[:, 0] / math.sqrt(d), -1)
        out[r] = (p[:, None, :] @ vv)[:, 0]
    return out

def bench(batch, heads, kv, slots, last, layers, variants):
    splits = -(-slots // 64)
    ks = [torch.randn(batch, kv, slots, 128, device="cuda", dtype=torch.bfloat16) for _ in range(layers)]
    vs = [torch.randn(batch, kv, slots, 128, device="cuda", dtype=torch.bfloat16) for _ in range(layers)]
    q = torch.randn(batch, heads, 128, device="cuda", dtype=torch.bfloat16)
    pad = torch.tensor([(r * 37) % 64 for r in range(batch)], device="cuda", dtype=torch.int64)
    ln = torch.tensor([last], device="cuda", dtype=torch.int64)
    po = torch.empty(batch * heads * splits * 128, device="cuda")
    pml = torch.empty(batch * heads * splits * 2, device="cuda")
    out = torch.empty(batch, heads, 128, device="cuda", dtype=torch.bfloat16)
    ref = reference(q, ks[0], vs[0], pad.tolist(), last)
    kv_bytes = sum((last + 1 - p) for p in pad.tolist()) * kv * 128 * 2 * 2
    base = plan(batch, kv, splits)
    res = []
    for var, used in variants(base, splits):
        st = torch.cuda.current_stream().cuda_stream
        e = lib.ab_run(var, used, q.data_ptr(), ks[0].data_ptr(), vs[0].data_ptr(), pad.data_ptr(), ln.data_ptr(), po.data_ptr(), pml.data_ptr(), out.data_ptr(), batch, heads, kv, slots, splits, st)
        torch.cuda.synchronize()
        if e != 0:
            res.append((var, used, None, None, f"err {e}")); continue
        err = (out.float() - ref).abs().max().item()
        row = [var, used, err]
        for pdl in (0, 1):
            lib.ab_set_pdl(pdl)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                st = torch.cuda.current_stream().cuda_stream
                for i in range(layers):
                    lib.ab_run(var, used, q.data_ptr(), ks[i].data_ptr(), vs[i].data_ptr(), pad.data_ptr(), ln.data_ptr(), po.data_ptr(), pml.data_ptr(), out.data_ptr(), batch, heads, kv, slots, splits, st)
            for _ in range(3): g.replay()
            torch.cuda.synchronize()
            s, e2 = torch.cuda.Event(True), torch.cuda.Event(True)
            s.record()
            for _ in range(20): g.replay()
            e2.record(); torch.cuda.synchronize()
            row.append(s.elapsed_time(e2) / 20 / layers * 1000)
        lib.ab_set_pdl(0)
        row.append("")
        res.append(tuple(row))
    floor = kv_bytes / 4.8e12 * 1e6
    print(f"\nbatch {batch} heads {heads}/{kv} slots {slots} last {last}: KV {kv_bytes / 1e6:.2f} MB a layer, floor {floor:.2f} us, plan used {base}")
    print(f"  {'variant':<10} {'used':>4} {'max err':>8} {'us nopdl':>9} {'us pdl':>8} {'GB/s pdl':>9}")
    for var, used, err, t0, t1, *note in res:
        if err is None:
            print(f"  {NAMES[var]:<10} {used:>4} {note[0]}"); continue
        print(f"  {NAMES[var]:<10} {used:>4} {err:8.4f} {t0:9.2f} {t1:8.2f} {kv_bytes / t1 / 1e3:9.0f}")
    del ks, vs
    torch.cuda.empty_cache()

def all_variants(base, splits):
    cl = min(base, 16)
    out = [(0, base), (1, base), (2, base), (5, base), (3, cl), (4, cl), (6, cl), (7, cl)]
    if cl > 8: out += [(3, 8), (4, 8)]
    return out

print(torch.cuda.get_device_name(0), "SMs", SM)
def sweep(base, splits):
    return [(v, u) for u in sorted({2, 3, 4, 5, 6, 8, 9, 12, 17, base} & set(range(1, splits + 1))) for v in (0, 5)]
for batch in (8, 32, 128):
    bench(batch, 32, 8, 1088, 1060, 32 if batch < 128 else 8, sweep)
bench(32, 10, 10, 448, 420, 32, sweep)
