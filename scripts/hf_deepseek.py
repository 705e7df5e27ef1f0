"""transformers' DeepSeek-OCR-2 modules built to DeepSeek-OCR's dimensions, and the map between
their parameter names and DeepSeek-OCR's official tensor names (docs/verification.md), for
verify_vs_hf.py and bench_vs_hf.py. Official names are derived from HF's by rule; the list of
official names and shapes lives in llmprof's loader only.
"""
from __future__ import annotations

from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file


def hf_text_config(d: dict, experts_impl: str | None):
    """DeepseekOcr2TextConfig for DeepSeek-OCR's decoder dimensions `d` (docs/deepseek-ocr.md §1), SDPA attention;
    `experts_impl` None leaves transformers' default experts implementation."""
    from transformers import DeepseekOcr2TextConfig

    assert not d["norm_topk_prob"], "HF DeepseekOcr2 router never renormalises"
    n = d["num_hidden_layers"]
    extra = {} if experts_impl is None else {"experts_implementation": experts_impl}
    return DeepseekOcr2TextConfig(
        vocab_size=d["vocab_size"], hidden_size=d["hidden_size"],
        intermediate_size=d["intermediate_size"], moe_intermediate_size=d["moe_intermediate_size"],
        num_hidden_layers=n, num_attention_heads=d["num_attention_heads"],
        num_key_value_heads=d["num_key_value_heads"], n_routed_experts=d["n_routed_experts"],
        n_shared_experts=d["n_shared_experts"], num_experts_per_tok=d["num_experts_per_tok"],
        routed_scaling_factor=d["routed_scaling_factor"], topk_method="greedy", n_group=1, topk_group=1,
        mlp_layer_types=["dense" if i < d["first_k_dense_replace"] else "sparse" for i in range(n)],
        rms_norm_eps=d["rms_norm_eps"],
        rope_parameters={"rope_type": "default", "rope_theta": d["rope_theta"]},
        max_position_embeddings=d["max_position_embeddings"], hidden_act="silu",
        attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
        bos_token_id=d["bos_token_id"], eos_token_id=d["eos_token_id"], pad_token_id=None,
        attn_implementation="sdpa", **extra,
    )


def build_hf_decoder(d: dict, device: torch.device, experts_impl: str):
    """DeepseekOcr2TextModel (no `model.` prefix) + a bias-free lm_head Linear, as
    DeepseekOcr2ForConditionalGeneration builds it; fp32."""
    from transformers import DeepseekOcr2TextModel

    cfg = hf_text_config(d, experts_impl)
    with torch.device(device):
        model = DeepseekOcr2TextModel(cfg)
        lm_head = torch.nn.Linear(d["hidden_size"], d["vocab_size"], bias=False)
    model.eval()
    return model, lm_head


def build_hf_sam(c: dict, device: torch.device):
    from transformers import DeepseekOcr2SamVisionConfig
    from transformers.models.deepseek_ocr2.modeling_deepseek_ocr2 import DeepseekOcr2SamVisionEncoder

    cfg = DeepseekOcr2SamVisionConfig(
        hidden_size=c["width"], output_channels=c["out_chans"], num_hidden_layers=c["depth"],
        num_attention_heads=c["heads"], num_channels=3, image_size=c["image_size"],
        patch_size=c["patch_size"], hidden_act="gelu", layer_norm_eps=c["layer_norm_eps"],
        qkv_bias=True, mlp_dim=c["mlp_dim"], use_abs_pos=True, use_rel_pos=True,
        window_size=c["window_size"], global_attn_indexes=list(c["global_attn_indexes"]),
        downsample_channels=list(c["downsample_channels"]), attn_implementation="sdpa",
    )
    with torch.device(device):
        model = DeepseekOcr2SamVisionEncoder(cfg)
    model.eval()
    return model


def decoder_hf_to_official(params: dict[str, torch.Tensor]):
    """Yields (hf_name, [official names], how), how 'copy', 'gate_up' or 'down', for every HF
    parameter of the decoder (+ "lm_head.weight"), by HF's naming rule: `model.` in front, and
    the stacked experts [E, 2F, H] / [E, H, F] split into one official tensor per expert and
    projection. The official list itself lives in llmprof (the loader checks every name and
    shape of the file this writes: `llmprof debug logits` fails on any difference)."""
    for hf_name, p in params.items():
        if hf_name == "lm_head.weight":
            yield hf_name, [hf_name], "copy"
        elif hf_name.endswith(".mlp.experts.gate_up_proj"):
            base = "model." + hf_name[: -len(".gate_up_proj")]
            names = []
            for e in range(p.shape[0]):
                names += [f"{base}.{e}.gate_proj.weight", f"{base}.{e}.up_proj.weight"]
            yield hf_name, names, "gate_up"
        elif hf_name.endswith(".mlp.experts.down_proj"):
            base = "model." + hf_name[: -len(".down_proj")]
            yield hf_name, [f"{base}.{e}.down_proj.weight" for e in range(p.shape[0])], "down"
        else:
            yield hf_name, ["model." + hf_name], "copy"


def decoder_params(model, lm_head) -> dict[str, torch.Tensor]:
    params = dict(model.named_parameters())
    params["lm_head.weight"] = lm_head.weight
    return params


SAM_RENAMES = [  # official suffix piece -> HF piece (platform.md "GPU machine")
    ("patch_embed.proj.", "patch_embed.projection."),
    ("blocks.", "layers."),
    (".norm1.", ".layer_norm1."),
    (".norm2.", ".layer_norm2."),
    ("neck.0.", "neck.conv1."),
    ("neck.1.", "neck.layer_norm1."),
    ("neck.2.", "neck.conv2."),
    ("neck.3.", "neck.layer_norm2."),
    ("net_2.", "proj.conv1."),
    ("net_3.", "proj.conv2."),
]


def sam_hf_to_official(name: str) -> str:
    """The official name of HF SAM tensor `name` (SAM_RENAMES backwards, the neck's before the
    blocks' norms so that `neck.layer_norm1.` becomes `neck.1.`, not `neck.norm1.`)."""
    n = name
    for a, b in reversed(SAM_RENAMES):
        if n.startswith(b) or (b.startswith(".") and b in n):
            n = n.replace(b, a, 1)
    return "model.sam_model." + n


def sam_official_to_hf(name: str) -> str:
    assert name.startswith("model.sam_model."), name
    n = name[len("model.sam_model."):]
    for a, b in SAM_RENAMES:
        if n.startswith(a) or (a.startswith(".") and a in n):
            n = n.replace(a, b, 1)
    return n


def hf_to_official_decoder(model, lm_head) -> dict[str, torch.Tensor]:
    """HF state → official names; every tensor a fresh CPU copy (safetensors refuses shared storage)."""
    def cpu(t):
        return t.detach().to("cpu", copy=True).contiguous()

    params = decoder_params(model, lm_head)
    out = {}
    for hf_name, off_names, how in decoder_hf_to_official(params):
        t = params[hf_name]
        if how == "copy":
            out[off_names[0]] = cpu(t)
        elif how == "gate_up":
            F = t.shape[1] // 2  # [E, 2F, H]: gate rows first, then up
            for e in range(t.shape[0]):
                out[off_names[2 * e]] = cpu(t[e, :F])
                out[off_names[2 * e + 1]] = cpu(t[e, F:])
        else:  # [E, H, F]
            for e in range(t.shape[0]):
                out[off_names[e]] = cpu(t[e])
    return out


def load_official_into_decoder(model, lm_head, path: Path, device: torch.device) -> None:
    """Strict load: every HF parameter is written exactly once, every official tensor is used."""
    params = decoder_params(model, lm_head)
    done, used = set(), set()
    with torch.no_grad(), safe_open(str(path), framework="pt", device=str(device)) as f:
        present = set(f.keys())
        for hf_name, off_names, how in decoder_hf_to_official(params):
            missing = [n for n in off_names if n not in present]
            if missing:
                raise SystemExit(f"{path}: missing {missing[:3]} (+{len(missing) - 3 if len(missing) > 3 else 0})")
            p = params[hf_name]
            if how == "copy":
                t = f.get_tensor(off_names[0])
                if tuple(t.shape) != tuple(p.shape):
                    raise SystemExit(f"{off_names[0]}: shape {tuple(t.shape)} != HF {hf_name} {tuple(p.shape)}")
                p.copy_(t)
            elif how == "gate_up":
                F = p.shape[1] // 2
                for e in range(p.shape[0]):
                    p[e, :F].copy_(f.get_tensor(off_names[2 * e]))
                    p[e, F:].copy_(f.get_tensor(off_names[2 * e + 1]))
            else:
                for e in range(p.shape[0]):
                    p[e].copy_(f.get_tensor(off_names[e]))
            done.add(hf_name)
            used.update(off_names)
    left = sorted(set(params) - done)
    extra = sorted(present - used)
    if left or extra:
        raise SystemExit(f"decoder load not exact: HF params not set {left[:5]}, unused tensors {extra[:5]}")


def load_official_into_sam(model, path: Path, device: torch.device) -> None:
    sd = load_file(str(path), device=str(device))
    hf = {}
    for name, t in sd.items():
        if not name.startswith("model.sam_model."):
            raise SystemExit(f"{path}: unexpected tensor {name}")
        hf[sam_official_to_hf(name)] = t
    res = model.load_state_dict(hf, strict=True)
    del res


def params_to(model: torch.nn.Module, dtype: torch.dtype) -> None:
    """Cast parameters only. Buffers (the RoPE inv_freq) stay fp32, as with
    `from_pretrained(dtype=torch.bfloat16)` (checked: inv_freq stays float32 there)."""
    for p in model.parameters():
        p.data = p.data.to(dtype)
