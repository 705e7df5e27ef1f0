# torch._grouped_mm with a prefill's routing: 512 slots spread over 256 experts (as 64 tokens x
# top-8), fused gate/up (N=4096) and split (N=2048), bf16, against per-expert fp32 matmuls.
import torch
torch.manual_seed(0)
E, F, H = 256, 2048, 7168
idx = torch.randint(0, E, (512,), device="cuda")
counts = torch.bincount(idx, minlength=E)
offs = counts.cumsum(0).to(torch.int32)
x = torch.randn(512, H, device="cuda", dtype=torch.bfloat16)
print("experts used", int((counts > 0).sum()), "max rows", int(counts.max()))
for n_f in (2 * F, F):
    w = (torch.randn(E, n_f, H, device="cuda", dtype=torch.bfloat16) * H ** -0.5)
    y = torch._grouped_mm(x, w.transpose(1, 2), offs=offs).float()
    ends = offs.tolist(); start = 0; worst = 0.0; worst_e = -1
    for e in range(E):
        end = ends[e]
        if end > start:
            ref = x[start:end].float() @ w[e].float().T
            r = ((y[start:end] - ref).abs().max() / ref.abs().max()).item()
            if r > worst: worst, worst_e = r, e
        start = end
    print(f"N={n_f}: worst rel err {worst:.2e} at expert {worst_e}")
    del w, y; torch.cuda.empty_cache()
