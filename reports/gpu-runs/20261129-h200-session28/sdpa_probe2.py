# SDPA backends on MLA's shapes in bf16 against fp64 math on the same bf16-rounded inputs, with
# peaky scores (std ~8): prefill (128 heads x 64 queries, K/V one head expanded, causal) and the
# decode fold (1 head, 128 query rows, additive mask).
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
torch.manual_seed(0)
B, H, T, Dk, Dv = 1, 128, 64, 576, 512
s = 0.1147
def err(o, ref): return ((o.double() - ref).abs().max() / ref.abs().max()).item()
for scale_in in (1.0, 3.0):
    q = (torch.randn(B, H, T, Dk, device="cuda") * scale_in).bfloat16()
    kv = (torch.randn(B, 1, T, Dk, device="cuda") * scale_in).bfloat16()
    k, v = kv, kv[..., :Dv]
    ke, ve = k.expand(B, H, T, Dk), v.expand(B, H, T, Dv)
    ref = F.scaled_dot_product_attention(q.double(), ke.double(), ve.double(), is_causal=True, scale=s)
    out = {"default": lambda: F.scaled_dot_product_attention(q, ke, ve, is_causal=True, scale=s)}
    for name, be in [("math", SDPBackend.MATH), ("efficient", SDPBackend.EFFICIENT_ATTENTION)]:
        def f(be=be):
            with sdpa_kernel([be]):
                return F.scaled_dot_product_attention(q, ke, ve, is_causal=True, scale=s)
        out[name] = f
    sc = (q.double() @ ke.double().transpose(-1, -2) * s).std().item()
    print(f"prefill in-scale {scale_in} score std {sc:.1f}: " + " ".join(f"{n}={err(fn(), ref):.2e}" for n, fn in out.items()))
    # decode fold: one query token per head, as 128 queries of one head
    qd = q[:, :, -1:, :].reshape(B, 1, H, Dk)
    mask = torch.zeros(B, 1, 1, T, device="cuda", dtype=torch.bfloat16)
    refd = F.scaled_dot_product_attention(qd.double(), k.double(), v.double(), attn_mask=mask.double(), scale=s)
    outd = {"default": lambda: F.scaled_dot_product_attention(qd, k, v, attn_mask=mask, scale=s)}
    for name, be in [("math", SDPBackend.MATH), ("efficient", SDPBackend.EFFICIENT_ATTENTION)]:
        def f(be=be):
            with sdpa_kernel([be]):
                return F.scaled_dot_product_attention(qd, k, v, attn_mask=mask, scale=s)
        outd[name] = f
    print(f"decode  in-scale {scale_in}: " + " ".join(f"{n}={err(fn(), refd):.2e}" for n, fn in outd.items()))
