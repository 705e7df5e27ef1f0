# Session 32: prefill attention with GQA (Llama-3.1-8B: 32 query heads, 8 kv heads, hd 128), bf16,
# causal: K/V repeated per group (today) against SDPA's enable_gqa, per backend.
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
torch.manual_seed(0)
dev = "cuda"
def bench(fn, n=50):
    for _ in range(5): fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(True), torch.cuda.Event(True)
    s.record()
    for _ in range(n): fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / n * 1000  # us
for B, T in ((1, 1024), (8, 1024), (1, 4096)):
    S = T + 64
    q = torch.randn(B, T, 32, 128, device=dev, dtype=torch.bfloat16).transpose(1, 2)
    kc = torch.randn(B, 8, S, 128, device=dev, dtype=torch.bfloat16)
    vc = torch.randn(B, 8, S, 128, device=dev, dtype=torch.bfloat16)
    k, v = kc[:, :, :T], vc[:, :, :T]
    def rep(x):
        b, n, l, d = x.shape
        return x.unsqueeze(2).expand(b, n, 4, l, d).reshape(b, n * 4, l, d)
    ref = F.scaled_dot_product_attention(q.float(), rep(k).float(), rep(v).float(), is_causal=True)
    rows = []
    def case(name, fn, backend=None):
        try:
            if backend is None:
                o = fn(); t = bench(fn)
            else:
                with sdpa_kernel(backend):
                    o = fn(); t = bench(fn)
            err = (o.float() - ref).abs().max().item()
            rows.append(f"  {name:<34} {t:8.1f} us  max|err| {err:.3g}  out stride {tuple(o.stride())}")
        except Exception as ex:
            rows.append(f"  {name:<34} refused: {str(ex).splitlines()[0][:110]}")
    case("repeat_kv + default", lambda: F.scaled_dot_product_attention(q, rep(k), rep(v), is_causal=True))
    case("repeat_kv copies alone", lambda: (rep(k), rep(v)))
    for nm, be in (("default", None), ("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
        case(f"enable_gqa {nm}", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True), be)
    case("repeat_kv + cudnn", lambda: F.scaled_dot_product_attention(q, rep(k), rep(v), is_causal=True), SDPBackend.CUDNN_ATTENTION)
    case("repeat_kv + flash", lambda: F.scaled_dot_product_attention(q, rep(k), rep(v), is_causal=True), SDPBackend.FLASH_ATTENTION)
    kcon, vcon = k.contiguous(), v.contiguous()
    case("enable_gqa flash, contiguous kv", lambda: F.scaled_dot_product_attention(q, kcon, vcon, is_causal=True, enable_gqa=True), SDPBackend.FLASH_ATTENTION)
    case("enable_gqa cudnn, contiguous kv", lambda: F.scaled_dot_product_attention(q, kcon, vcon, is_causal=True, enable_gqa=True), SDPBackend.CUDNN_ATTENTION)
    fl = 4 * B * 32 * T * T * 128 / 2
    print(f"B={B} T={T} (causal FLOPs {fl/1e9:.1f} G; at 989 TFLOPS {fl/989e12*1e6:.1f} us)")
    print("\n".join(rows))
print(torch.__version__, torch.backends.cudnn.version(), torch.cuda.get_device_name())
