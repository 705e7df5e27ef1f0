#!/usr/bin/env python3
"""Python half of the GPU differential check of llmprof's DeepSeek-OCR against HF transformers.

The reference is transformers 5.17's DeepSeek-OCR-2 code, which has the same decoder design as
DeepSeek-OCR (MHA + DeepSeek-V2 MoE) and the same SAM ViT-B encoder (docs/verification.md lists
the differences). Both sides read the SAME safetensors file, written under DeepSeek-OCR's
official tensor names (docs/deepseek-ocr.md §6); the reference maps those names onto the HF
module (stacking experts) and loads them strictly.

Subcommands (see --help of each):
  make-inputs       IDS json (random ids in [3, 100000)) and normalised random pixels per size
  make-weights      seeded random weights: DIR/model.safetensors (official names, fp32),
                    DIR/verify_meta.json, and DIR/config.json (DeepSeek-OCR format) when the
                    dimensions differ from the released model
  reference-logits  HF decoder: last-prompt-position logits + N greedy tokens (one pass, several dtypes)
  reference-sam     HF SAM encoder: features [1,1024,S/64,S/64] (one pass, several sizes/dtypes)
  compare           relative / max-abs error, cosine, greedy prefix; exit 1 past the bounds
  table             the final table from the records `compare --record` appended

Needs python>=3.10, torch, safetensors; transformers only for make-weights and reference-*.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

# --------------------------------------------------------------------------------------------
# Configurations: DeepSeek-OCR's, from conf/model/deepseek_ocr/arch/deepseek_ocr.yaml (field names
# of docs/deepseek-ocr.md §1). TINY_* are this script's shapes for CPU dry runs only.

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conf_arch import arch  # noqa: E402

_OCR = arch("deepseek_ocr", "deepseek_ocr")
_TOKENS = _OCR["tokens"]
# The decoder's fields with the ids its config.json carries (head_dim is implied by the heads).
REAL_DEC = {k: v for k, v in _OCR["decoder"].items() if k != "head_dim"}
REAL_DEC.update(bos_token_id=_TOKENS["bos_token_id"], eos_token_id=_TOKENS["eos_token_id"])
# llmprof validates token ids (the image id) against the vocab, so the tiny vocab stays real.
TINY_DEC = dict(REAL_DEC, hidden_size=128, intermediate_size=256, moe_intermediate_size=64,
                num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4,
                n_routed_experts=8, n_shared_experts=2, num_experts_per_tok=3)

REAL_SAM = dict(_OCR["sam"])
# llmprof's config.json reader only maps width/layers/heads/global_attn_indexes/
# downsample_channels for SAM, so the tiny SAM changes only those.
TINY_SAM = dict(REAL_SAM, width=96, depth=3, heads=2, global_attn_indexes=[1])


def log(msg: str) -> None:
    print(f"[verify_vs_hf] {msg}", file=sys.stderr, flush=True)


def pick_device(name: str | None) -> torch.device:
    if name:
        return torch.device(name)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def set_fp32_precision(conv_tf32: bool = False) -> None:
    """IEEE fp32 everywhere (no TF32 in cuBLAS or cuDNN) unless `conv_tf32` (libtorch's default
    for cuDNN convolutions, kept for a diagnostic variant)."""
    conv = "tf32" if conv_tf32 else "ieee"
    try:  # torch >= 2.9 API; mixing it with the legacy allow_tf32 flags raises.
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = conv
        torch.backends.cudnn.rnn.fp32_precision = conv  # same as conv: reading the legacy flag stays legal
    except AttributeError:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = conv_tf32


def parse_dtypes(s: str) -> list[str]:
    out = [d.strip() for d in s.split(",") if d.strip()]
    for d in out:
        if d not in ("fp32", "bf16", "fp32-tf32conv"):
            raise SystemExit(f"unknown dtype {d!r} (fp32, bf16, fp32-tf32conv)")
    return out


def fill_template(tmpl: str, n_items: int, **kw) -> str:
    path = tmpl.format(**kw)
    if n_items > 1 and path == tmpl:
        raise SystemExit(f"--out {tmpl!r} needs {{...}} placeholders ({', '.join(kw)}) for several outputs")
    return path


# --------------------------------------------------------------------------------------------
# HF modules and name maps: scripts/hf_deepseek.py (re-exported for bench_vs_hf.py)

from hf_deepseek import (  # noqa: E402,F401
    build_hf_decoder,
    build_hf_sam,
    hf_text_config,
    hf_to_official_decoder,
    load_official_into_decoder,
    load_official_into_sam,
    params_to,
    sam_hf_to_official,
    sam_official_to_hf,
)


# --------------------------------------------------------------------------------------------
# make-inputs

def cmd_make_inputs(a) -> int:
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(a.seed)
    ids = torch.randint(3, 100000, (a.seq,), generator=g).tolist()
    (out / "ids.json").write_text(json.dumps(ids) + "\n")
    for s in a.size:
        if s % 64:
            raise SystemExit(f"--size {s} is not a multiple of 64")
        # Like ToTensor + Normalize(0.5, 0.5) of an 8-bit image: values k/255 mapped to [-1, 1].
        px = torch.randint(0, 256, (1, 3, s, s), generator=g).float().div(255.0).sub(0.5).div(0.5)
        save_file({"pixels": px.contiguous()}, str(out / f"pixels_{s}.safetensors"))
    log(f"wrote {out}/ids.json ({a.seq} ids) and pixels_{{{','.join(map(str, a.size))}}}.safetensors")
    return 0


# --------------------------------------------------------------------------------------------
# make-weights

def ocr_config_json(dec: dict, sam: dict) -> dict:
    """DeepSeek-OCR `config.json` layout (docs/deepseek-ocr.md §1): LM fields flat and in language_config."""
    lm = {k: dec[k] for k in (
        "vocab_size", "hidden_size", "intermediate_size", "moe_intermediate_size",
        "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "n_routed_experts",
        "n_shared_experts", "num_experts_per_tok", "first_k_dense_replace", "norm_topk_prob",
        "routed_scaling_factor", "rms_norm_eps", "rope_theta", "max_position_embeddings",
        "bos_token_id", "eos_token_id")}
    lm.update(topk_method="greedy", scoring_func="softmax", n_group=1, topk_group=1, use_mla=False,
              q_lora_rank=None, kv_lora_rank=None, qk_nope_head_dim=0, qk_rope_head_dim=0,
              v_head_dim=0, rope_scaling=None, hidden_act="silu", attention_bias=False,
              tie_word_embeddings=False, lm_head=True, rm_head=False, torch_dtype="float32")
    cfg = {"architectures": ["DeepseekOCRForCausalLM"], "model_type": "deepseek_vl_v2",
           "candidate_resolutions": [[1024, 1024]], "global_view_pos": "head", "tile_tag": "2D"}
    cfg.update(lm)
    cfg["language_config"] = dict(lm, architectures=["DeepseekV2ForCausalLM"], model_type="deepseek_v2")
    cfg["projector_config"] = {"projector_type": "linear", "input_dim": 2048,
                               "n_embed": dec["hidden_size"], "model_type": "mlp_projector"}
    cfg["vision_config"] = {
        "image_size": 1024, "mlp_ratio": 3.7362, "model_name": "deeplip_b_l", "model_type": "vision",
        "width": {
            "clip-l-14-224": {"heads": 16, "image_size": 224, "layers": 24, "patch_size": 14, "width": 1024},
            "sam_vit_b": {"downsample_channels": list(sam["downsample_channels"]),
                          "global_attn_indexes": list(sam["global_attn_indexes"]),
                          "heads": sam["heads"], "layers": sam["depth"], "width": sam["width"]},
        },
    }
    return cfg


@torch.no_grad()
def init_params(named: list[tuple[str, torch.nn.Parameter]], seed: int, std: float, part: str) -> None:
    """Deterministic by sorted name. Norm scales 1 + N(0, 0.05²) (so a missing/misplaced norm
    weight shows up), biases N(0, std²), SAM pos_embed / rel-pos tables N(0, 0.1²) (large enough
    that the rel-pos bias matters), everything else N(0, std²)."""
    dev = named[0][1].device
    g = torch.Generator(device=dev).manual_seed(seed)
    for name, p in sorted(named, key=lambda x: x[0]):
        base = name.rsplit(".", 1)[-1]
        is_norm = ("norm" in name) and base == "weight"
        if is_norm:
            p.normal_(0.0, 0.05, generator=g).add_(1.0)
        elif part == "sam" and (base in ("pos_embed", "rel_pos_h", "rel_pos_w")):
            p.normal_(0.0, 0.1, generator=g)
        else:
            p.normal_(0.0, std, generator=g)


def cmd_make_weights(a) -> int:
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    device = pick_device(a.device)
    t0 = time.time()
    if a.part == "decoder":
        dec = dict(TINY_DEC if a.tiny else REAL_DEC)
        if a.layers is not None:
            dec["num_hidden_layers"] = a.layers
        sam = dict(REAL_SAM)
        model, lm_head = build_hf_decoder(dec, device, "eager")
        named = list(model.named_parameters()) + [("lm_head.weight", lm_head.weight)]
        init_params(named, a.seed, a.std, "decoder")
        tensors = hf_to_official_decoder(model, lm_head)
        needs_config = dec != REAL_DEC
        del model, lm_head
    else:
        sam = dict(TINY_SAM if a.tiny else REAL_SAM)
        dec = dict(REAL_DEC)
        model = build_hf_sam(sam, device)
        init_params(list(model.named_parameters()), a.seed, a.std, "sam")
        hf_sd = model.state_dict()
        tensors = {sam_hf_to_official(n): t.detach().to("cpu", copy=True).contiguous() for n, t in hf_sd.items()}
        broken = [n for n in hf_sd if sam_official_to_hf(sam_hf_to_official(n)) != n]
        if broken or len(tensors) != len(hf_sd):
            raise SystemExit(f"SAM renames do not round-trip: {broken[:5]}")
        needs_config = sam != REAL_SAM
        del model
    # Names and shapes are checked by llmprof's loader, the one list of them (docs/deepseek-ocr.md §6).
    n_params = sum(t.numel() for t in tensors.values())
    log(f"{a.part}: {len(tensors)} tensors, {n_params:,} params built in {time.time() - t0:.1f}s; writing")
    t1 = time.time()
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    cfg_path = out / "config.json"
    if needs_config or a.write_config:
        cfg_path.write_text(json.dumps(ocr_config_json(dec, sam), indent=2) + "\n")
    elif cfg_path.exists():
        cfg_path.unlink()
    meta = {"part": a.part, "seed": a.seed, "std": a.std, "tiny": a.tiny, "decoder": dec, "sam": sam,
            "tensors": len(tensors), "params": n_params, "config_json": cfg_path.exists()}
    (out / "verify_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    log(f"wrote {out}/model.safetensors ({n_params * 4 / 1e9:.2f} GB) in {time.time() - t1:.1f}s"
        f"{'; config.json' if cfg_path.exists() else ''}")
    return 0


def read_meta(d: Path) -> dict:
    p = d / "verify_meta.json"
    if not p.is_file():
        raise SystemExit(f"{p} missing: make the weights with `make-weights`")
    return json.loads(p.read_text())


# --------------------------------------------------------------------------------------------
# reference-logits

@torch.inference_mode()
def greedy_reference(model, lm_head, ids: list[int], n: int, device: torch.device):
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    x = torch.tensor([ids], dtype=torch.long, device=device)
    h = model(input_ids=x, past_key_values=cache, use_cache=True).last_hidden_state
    # HF's ForConditionalGeneration (logits_to_keep=0) applies lm_head to every prompt position.
    logits = lm_head(h)[:, -1].float()
    prompt_logits = logits[0].clone()
    toks, gaps = [], []
    for i in range(n):
        top2 = logits[0].topk(2).values
        gaps.append(float(top2[0] - top2[1]))
        nxt = logits.argmax(-1)  # (1,)
        toks.append(int(nxt))
        if i + 1 == n:
            break
        h = model(input_ids=nxt[:, None], past_key_values=cache, use_cache=True).last_hidden_state
        logits = lm_head(h)[:, -1].float()
    return prompt_logits.cpu(), torch.tensor(toks, dtype=torch.int64), torch.tensor(gaps, dtype=torch.float32)


def ref_metadata(config, device: torch.device, dtype: str) -> dict[str, str]:
    import transformers

    return {
        "reference": f"transformers {transformers.__version__}, torch {torch.__version__}",
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "dtype": dtype,
        "attn_implementation": str(config._attn_implementation),
        "experts_implementation": str(getattr(config, "_experts_implementation", None)),
    }


def cmd_reference_logits(a) -> int:
    d = Path(a.dir)
    meta = read_meta(d)
    dec = meta["decoder"]
    device = pick_device(a.device)
    dtypes = parse_dtypes(a.dtype)
    ids = json.loads(Path(a.ids).read_text())
    set_fp32_precision()
    t0 = time.time()
    model, lm_head = build_hf_decoder(dec, device, a.experts_impl)
    load_official_into_decoder(model, lm_head, d / "model.safetensors", device)
    log(f"HF decoder ({model.config._attn_implementation} attention, "
        f"{model.config._experts_implementation} experts) loaded on {device} in {time.time() - t0:.1f}s")
    # fp32 first: the bf16 pass casts the parameters in place.
    for dt in sorted(dtypes, key=lambda x: x != "fp32"):
        if dt == "fp32-tf32conv":
            continue  # no convolutions in the decoder
        if dt == "bf16":
            params_to(model, torch.bfloat16)
            params_to(lm_head, torch.bfloat16)
        t1 = time.time()
        try:
            logits, toks, gaps = greedy_reference(model, lm_head, ids, a.greedy, device)
        except RuntimeError as e:
            # Safety net: should torch's grouped_mm refuse this dtype/device, use HF's eager loop.
            if model.config._experts_implementation == "eager":
                raise
            log(f"{dt}: experts implementation {model.config._experts_implementation} failed ({e}); "
                "retrying with eager")
            model.set_experts_implementation("eager")
            logits, toks, gaps = greedy_reference(model, lm_head, ids, a.greedy, device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        path = fill_template(a.out, len(dtypes), dtype=dt)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        save_file({"prompt_last_logits": logits.contiguous(), "greedy_ids": toks,
                   "greedy_top2_gap": gaps}, path, metadata=ref_metadata(model.config, device, dt))
        log(f"{dt}: prompt {len(ids)} + {a.greedy} greedy in {time.time() - t1:.1f}s -> {path} "
            f"(experts {model.config._experts_implementation}; first ids {toks[:8].tolist()})")
    return 0


# --------------------------------------------------------------------------------------------
# reference-sam

def cmd_reference_sam(a) -> int:
    d = Path(a.dir)
    meta = read_meta(d)
    sam_cfg = meta["sam"]
    device = pick_device(a.device)
    dtypes = parse_dtypes(a.dtype)
    t0 = time.time()
    model = build_hf_sam(sam_cfg, device)
    load_official_into_sam(model, d / "model.safetensors", device)
    log(f"HF SAM loaded on {device} in {time.time() - t0:.1f}s")
    pixels = []
    for p in a.pixels:
        px = load_file(p)["pixels"]
        if px.dim() != 4 or px.shape[1] != 3 or px.shape[2] != px.shape[3]:
            raise SystemExit(f"{p}: pixels must be [B,3,S,S], got {tuple(px.shape)}")
        pixels.append(px)
    n_out = len(pixels) * len(dtypes)
    for dt in sorted(dtypes, key=lambda x: x == "bf16"):  # bf16 last: it casts in place
        set_fp32_precision(conv_tf32=(dt == "fp32-tf32conv"))
        if dt == "bf16":
            params_to(model, torch.bfloat16)
        for px in pixels:
            s = px.shape[-1]
            t1 = time.time()
            with torch.inference_mode():
                x = px.to(device, torch.bfloat16 if dt == "bf16" else torch.float32)
                feats = model(pixel_values=x).last_hidden_state.float()
            if device.type == "cuda":
                torch.cuda.synchronize()
            want = (px.shape[0], sam_cfg["downsample_channels"][-1], s // 64, s // 64)
            if tuple(feats.shape) != want:
                raise SystemExit(f"HF SAM output {tuple(feats.shape)} != expected {want}")
            path = fill_template(a.out, n_out, dtype=dt, size=s)
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            save_file({"features": feats.cpu().contiguous()}, path,
                      metadata=ref_metadata(model.config, device, dt))
            log(f"{dt} S={s}: {tuple(feats.shape)} in {time.time() - t1:.2f}s -> {path}")
    return 0


# --------------------------------------------------------------------------------------------
# compare and table

def cmd_compare(a) -> int:
    ours, ref = load_file(a.ours), load_file(a.ref)
    res = {"name": a.name or Path(a.ours).stem, "gating": not a.no_gate, "checks": []}
    ok = True

    def check(metric: str, value, bound, passed: bool | None):
        nonlocal ok
        if passed is False:
            ok = False
        status = "" if passed is None else (" ok" if passed else " FAIL")
        print(f"{res['name']}: {metric} = {value}" + (f"  (bound {bound})" if bound is not None else "") + status)
        res["checks"].append({"metric": metric, "value": value, "bound": bound, "passed": passed})

    if a.key not in ours or a.key not in ref:
        raise SystemExit(f"key {a.key!r} missing (ours has {sorted(ours)}, ref has {sorted(ref)})")
    x, y = ours[a.key].double().flatten(), ref[a.key].double().flatten()
    if ours[a.key].shape != ref[a.key].shape:
        print(f"{res['name']}: shape ours {tuple(ours[a.key].shape)} != ref {tuple(ref[a.key].shape)}")
        ok = False
        res["checks"].append({"metric": "shape", "value": "mismatch", "bound": None, "passed": False})
    else:
        finite = bool(torch.isfinite(x).all())
        rel = float((x - y).norm() / y.norm().clamp_min(1e-30))
        mab = float((x - y).abs().max())
        cos = float(torch.dot(x, y) / (x.norm() * y.norm()).clamp_min(1e-30))
        check("finite", finite, None, finite if finite else False)
        check("rel_err", f"{rel:.3e}", a.max_rel, rel <= a.max_rel if a.max_rel is not None else None)
        check("max_abs", f"{mab:.3e}", a.max_abs, mab <= a.max_abs if a.max_abs is not None else None)
        check("cosine", f"{cos:.8f}", a.min_cos, cos >= a.min_cos if a.min_cos is not None else None)
        res.update(rel=rel, max_abs=mab, cos=cos)
        if a.key == "prompt_last_logits":
            same = int(x.argmax()) == int(y.argmax())
            check("argmax_equal", same, None, None)
    if a.greedy_key:
        g1, g2 = ours[a.greedy_key].long().flatten(), ref[a.greedy_key].long().flatten()
        n = min(len(g1), len(g2))
        prefix = next((i for i in range(n) if g1[i] != g2[i]), n)
        want = a.min_greedy if a.min_greedy is not None else None
        extra = ""
        if prefix < n and "greedy_top2_gap" in ref:
            extra = (f" (first difference at step {prefix}: ours {int(g1[prefix])}, ref {int(g2[prefix])}, "
                     f"ref top-2 logit gap there {float(ref['greedy_top2_gap'][prefix]):.3e})")
        check("greedy_prefix", f"{prefix}/{len(g2)}{extra}", want,
              (prefix >= want) if want is not None else None)
        res["greedy_prefix"], res["greedy_n"] = prefix, len(g2)
    res["passed"] = ok
    if a.record:
        with open(a.record, "a") as f:
            f.write(json.dumps(res) + "\n")
    print(f"{res['name']}: {'PASS' if ok else 'FAIL'}{'' if res['gating'] else ' (not gating)'}")
    return 0 if ok else 1


def cmd_table(a) -> int:
    rows = [json.loads(l) for l in Path(a.record).read_text().splitlines() if l.strip()]
    print(f"| {'check':<32} | {'rel_err':>9} | {'bound':>7} | {'max_abs':>9} | {'cosine':>10} | {'greedy':>6} | result |")
    print(f"|{'-' * 34}|{'-' * 11}|{'-' * 9}|{'-' * 11}|{'-' * 12}|{'-' * 8}|--------|")
    bad = 0
    for r in rows:
        bound = next((c["bound"] for c in r["checks"] if c["metric"] == "rel_err"), None)
        g = f"{r['greedy_prefix']}/{r['greedy_n']}" if "greedy_prefix" in r else "-"
        bounded = any(c["passed"] is not None and c["metric"] != "finite" for c in r["checks"])
        result = ("pass" if bounded else "info") if r["passed"] else ("FAIL" if r["gating"] else "fail*")
        bad += (not r["passed"]) and r["gating"]
        fmt = lambda v, f: (format(v, f) if v is not None else "-")
        print(f"| {r['name']:<32} | {fmt(r.get('rel'), '.3e'):>9} | {fmt(bound, 'g'):>7} | "
              f"{fmt(r.get('max_abs'), '.3e'):>9} | {fmt(r.get('cos'), '.7f'):>10} | {g:>6} | {result:<6} |")
    print("fail* = outside its bound but not gating (bf16); info = diagnostic row without bounds")
    return 1 if bad else 0


# --------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("make-inputs", help="ids.json and pixels_<S>.safetensors")
    p.add_argument("--out", required=True)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", type=int, nargs="+", default=[1024])
    p.set_defaults(fn=cmd_make_inputs)

    p = sub.add_parser("make-weights", help="seeded random weights under the official names")
    p.add_argument("--out", required=True)
    p.add_argument("--part", choices=["decoder", "sam"], required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--layers", type=int, default=None, help="decoder layers (default 12)")
    p.add_argument("--tiny", action="store_true", help="small dims for CPU dry runs (writes config.json)")
    p.add_argument("--std", type=float, default=0.02)
    p.add_argument("--device", default=None, help="where to build (default cuda if available)")
    p.add_argument("--write-config", action="store_true", help="write config.json even for the real dims")
    p.set_defaults(fn=cmd_make_weights)

    p = sub.add_parser("reference-logits", help="HF decoder logits + greedy ids")
    p.add_argument("--dir", required=True)
    p.add_argument("--ids", required=True)
    p.add_argument("--dtype", default="fp32", help="fp32, bf16 or fp32,bf16 (one load, fp32 first)")
    p.add_argument("--greedy", type=int, default=0)
    p.add_argument("--out", required=True, help="path; with several dtypes use {dtype}")
    p.add_argument("--device", default=None)
    p.add_argument("--experts-impl", default="grouped_mm", choices=["grouped_mm", "eager", "batched_mm"],
                   help="transformers experts implementation (grouped_mm is its default)")
    p.set_defaults(fn=cmd_reference_logits)

    p = sub.add_parser("reference-sam", help="HF SAM features")
    p.add_argument("--dir", required=True)
    p.add_argument("--pixels", required=True, nargs="+")
    p.add_argument("--dtype", default="fp32", help="comma list of fp32, bf16, fp32-tf32conv")
    p.add_argument("--out", required=True, help="path; with several outputs use {dtype} and {size}")
    p.add_argument("--device", default=None)
    p.set_defaults(fn=cmd_reference_sam)

    p = sub.add_parser("compare", help="errors of OURS against REF; exit 1 past the bounds")
    p.add_argument("--ours", required=True)
    p.add_argument("--ref", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--greedy-key", default=None)
    p.add_argument("--max-rel", type=float, default=None)
    p.add_argument("--max-abs", type=float, default=None)
    p.add_argument("--min-cos", type=float, default=None)
    p.add_argument("--min-greedy", type=int, default=None, help="required identical leading greedy tokens")
    p.add_argument("--name", default=None, help="label in the output and the record")
    p.add_argument("--record", default=None, help="append a JSON line with the results to this file")
    p.add_argument("--no-gate", action="store_true", help="mark the record as not gating (table)")
    p.set_defaults(fn=cmd_compare)

    p = sub.add_parser("table", help="print the table of a --record file; exit 1 if a gating check failed")
    p.add_argument("--record", required=True)
    p.set_defaults(fn=cmd_table)

    a = ap.parse_args(argv)
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
