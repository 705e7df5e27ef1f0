#!/usr/bin/env python3
"""DeepSeek-OCR-2's vision path against transformers' DeepseekOcr2 (docs/verification.md).

One command on the GPU machine (torch + transformers 5.17 + safetensors):

    LLMPROF="env LD_LIBRARY_PATH=... target/release/llmprof" \
      python scripts/verify_ocr2_vs_hf.py --work /tmp/ocr2-verify --out-dir $OUT

1. Builds transformers' DeepseekOcr2Model at the released vision dimensions (SAM ViT-B with a
   512->896 last conv, the 24-layer Qwen2 encoder with 768/1024 query tables, the 896->1280
   projector; a one-layer text model that is not compared) and re-draws every vision weight from
   a seeded generator: HF's own init leaves SAM degenerate (std 1e-10 weights, zero position
   tables), which would make the comparison meaningless.
2. Writes those weights under the official checkpoint names (model.sam_model.*,
   model.qwen2_model.*, model.projector.layers.*, model.view_seperator).
3. `llmprof debug vision --image PAGE` preprocesses the page (grid, image-token count, pixels)
   and encodes it; the same pixels go through HF's get_image_features, and again through
   `llmprof debug vision --pixels` in fp32 eager and bf16.
4. Compares: fp32 embeddings (relative L2 error <= 1e-4); bf16 against the fp32 reference, where
   the bound is relative to HF's own bf16 error (at most 2x it: 36 bf16 layers put both near
   2e-2, so an absolute 2e-2 bound would only measure rounding); the image-token count against
   257 + 144 x tiles of transformers' DeepseekOcr2ImageProcessor on the same page.
Writes table.md and results.json to --out-dir. Exit 0 when every fp32 bound holds.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import torch

SCRIPT_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPT_DIR))
from verify_vs_hf import REAL_DEC, hf_text_config, init_params, set_fp32_precision  # noqa: E402
from conf_arch import arch  # noqa: E402

FP32_MAX = 1e-4
# A bf16 run may be at most this many times less accurate (against HF fp32) than HF's own bf16.
BF16_GROWTH_MAX = 2.0

# transformers' SAM names -> the official checkpoint's (inverse of verify_vs_hf.SAM_RENAMES);
# prefix renames first, then the block-level infixes.
SAM_REV = [
    ("patch_embed.projection.", "patch_embed.proj."),
    ("neck.conv1.", "neck.0."),
    ("neck.layer_norm1.", "neck.1."),
    ("neck.conv2.", "neck.2."),
    ("neck.layer_norm2.", "neck.3."),
    ("proj.conv1.", "net_2."),
    ("proj.conv2.", "net_3."),
    ("layers.", "blocks."),
    (".layer_norm1.", ".norm1."),
    (".layer_norm2.", ".norm2."),
]


def log(msg: str) -> None:
    print(f"[verify-ocr2 {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def official_name(hf: str) -> str | None:
    """The official checkpoint name of a transformers DeepseekOcr2Model parameter; None for the
    text model (not compared)."""
    n = hf[len("model."):] if hf.startswith("model.") else hf
    if n.startswith("vision_tower.sam_encoder."):
        s = n[len("vision_tower.sam_encoder."):]
        for a, b in SAM_REV:
            if a.startswith("."):
                s = s.replace(a, b, 1)
            elif s.startswith(a):
                s = b + s[len(a):]
        return "model.sam_model." + s
    if n.startswith("vision_tower.vision_encoder."):
        return "model.qwen2_model.model.model." + n[len("vision_tower.vision_encoder."):]
    for side in (768, 1024):
        if n == f"vision_tower.query_{side}_resolution.weight":
            return f"model.qwen2_model.query_{side}.weight"
    if n.startswith("multi_modal_projector."):
        return "model.projector.layers." + n[len("multi_modal_projector."):]
    if n == "view_separator":
        return "model.view_seperator"
    if n.startswith("language_model.") or n.startswith("lm_head."):
        return None
    raise SystemExit(f"unmapped transformers parameter {hf}: extend official_name()")


def build_hf(device: torch.device, seed: int):
    from transformers import DeepseekOcr2Config, DeepseekOcr2Model

    # OCR-2's architecture from conf/model/deepseek_ocr/arch/deepseek_ocr2.yaml (its decoder is
    # OCR's, one layer of it is enough for the vision path checked here).
    ocr2 = arch("deepseek_ocr", "deepseek_ocr2")
    sam, qe = ocr2["sam"], ocr2["query_encoder"]
    dec = dict(REAL_DEC, num_hidden_layers=1)
    vision = {
        "sam_config": dict(hidden_size=sam["width"], num_hidden_layers=sam["depth"],
                           num_attention_heads=sam["heads"],
                           global_attn_indexes=sam["global_attn_indexes"],
                           downsample_channels=sam["downsample_channels"]),
        "encoder_config": dict(hidden_size=qe["hidden_size"], num_hidden_layers=qe["num_hidden_layers"],
                               num_attention_heads=qe["num_attention_heads"],
                               num_key_value_heads=qe["num_key_value_heads"],
                               intermediate_size=qe["intermediate_size"], rms_norm_eps=qe["rms_norm_eps"],
                               rope_parameters={"rope_type": "default", "rope_theta": qe["rope_theta"]},
                               vocab_size=1),
    }
    cfg = DeepseekOcr2Config(vision_config=vision, text_config=hf_text_config(dec, None).to_dict(),
                             image_token_id=ocr2["tokens"]["image_token_id"])
    enc = cfg.vision_config.encoder_config
    theta = (getattr(enc, "rope_parameters", None) or {}).get("rope_theta", getattr(enc, "rope_theta", None))
    assert theta == 1e6, f"the encoder's RoPE base is {theta}, not 1e6: config keys changed"
    with torch.device(device):
        model = DeepseekOcr2Model(cfg)
    model.eval()
    vision_params = [(n, p) for n, p in model.named_parameters() if official_name(n) is not None]
    with torch.no_grad():
        sam = [(n, p) for n, p in vision_params if ".sam_encoder." in n]
        rest = [(n, p) for n, p in vision_params if ".sam_encoder." not in n]
        init_params(sam, seed, 0.02, "sam")
        init_params(rest, seed + 1, 0.02, "encoder")
    return model, vision_params


def hf_features(model, global_px: torch.Tensor, tiles: torch.Tensor | None) -> torch.Tensor:
    n = 0 if tiles is None else tiles.shape[0]
    kw = dict(pixel_values=global_px)
    if tiles is not None:
        kw.update(pixel_values_local=tiles, num_local_patches=[n])
    with torch.no_grad():
        out = model.get_image_features(**kw)
    feats = getattr(out, "pooler_output", out)
    if isinstance(feats, (list, tuple)):
        feats = feats[0]
    return feats.reshape(-1, feats.shape[-1]).float().cpu()


def processor_tokens(page: Path) -> tuple[int | None, str]:
    """257 + 144 x tiles from transformers' image processor, or None with the reason."""
    try:
        from PIL import Image
        from transformers import DeepseekOcr2ImageProcessor

        enc = DeepseekOcr2ImageProcessor()(Image.open(page).convert("RGB"), return_tensors="pt")
        tiles = enc.get("num_local_patches")
        n = int(tiles[0]) if tiles is not None else 0
        return 257 + 144 * n, f"{n} tiles"
    except Exception as e:  # the processor needs torchvision; report instead of failing
        return None, f"processor unavailable: {type(e).__name__}: {e}"


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm())


def run_llmprof(llmprof: str, args: list[str], logs: Path, name: str) -> None:
    cmd = shlex.split(llmprof) + ["debug", "vision"] + args
    t0 = time.time()
    with open(logs / f"{name}.log", "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    log(f"llmprof {name}: rc {rc} in {time.time() - t0:.1f} s")
    if rc != 0:
        sys.stderr.write((logs / f"{name}.log").read_text()[-3000:])
        raise SystemExit(2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/llmprof-ocr2-verify")
    ap.add_argument("--out-dir", default=None)
    ap.add_argument("--page", default=str(SCRIPT_DIR.parent / "datasets/samples/page-01-text.png"))
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    from safetensors.torch import load_file, save_file

    llmprof = os.environ.get("LLMPROF")
    if not llmprof:
        raise SystemExit("set LLMPROF to the llmprof command")
    work = Path(a.work)
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    set_fp32_precision()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    t0 = time.time()
    model, params = build_hf(device, a.seed)
    weights = work / "vision.safetensors"
    save_file({official_name(n): p.detach().float().cpu().contiguous() for n, p in params}, str(weights))
    log(f"HF model built and {len(params)} vision tensors written in {time.time() - t0:.1f} s")

    ours_img = work / "ours_image_fp32.safetensors"
    run_llmprof(llmprof, ["--weights", str(weights), "--arch", "deepseek_ocr2", "--image", a.page,
                          "--dtype", "fp32", "--optim", "fast", "--out", str(ours_img)], logs, "image_fp32_fast")
    got = load_file(str(ours_img))
    pixels = work / "pixels.safetensors"
    save_file({k: got[k] for k in ("global", "tiles", "grid") if k in got}, str(pixels))
    runs = {"fp32 fast (--image)": got["embeddings"]}
    for dtype, optim in [("fp32", "eager"), ("bf16", "fast"), ("bf16", "eager")]:
        out = work / f"ours_{dtype}_{optim}.safetensors"
        run_llmprof(llmprof, ["--weights", str(weights), "--arch", "deepseek_ocr2", "--pixels", str(pixels),
                              "--dtype", dtype, "--optim", optim, "--out", str(out)], logs, f"pixels_{dtype}_{optim}")
        runs[f"{dtype} {optim}"] = load_file(str(out))["embeddings"]

    gpx = got["global"].to(device)
    tiles = got["tiles"].to(device) if "tiles" in got else None
    ref32 = hf_features(model, gpx, tiles)
    for p in model.parameters():
        p.data = p.data.to(torch.bfloat16)
    ref16 = hf_features(model, gpx.bfloat16(), None if tiles is None else tiles.bfloat16())
    hf_bf16_err = rel(ref16, ref32)

    tokens = int(got["image_tokens"].item())
    grid = [int(x) for x in got["grid"].tolist()]
    proc_tokens, proc_note = processor_tokens(Path(a.page))
    rows, ok = [], True
    shape_ok = all(t.shape == ref32.shape for t in runs.values())
    for name, t in runs.items():
        if t.shape != ref32.shape:
            rows.append(dict(run=name, rel_error=None, bound="shape", passed=False,
                             note=f"shape {list(t.shape)} vs reference {list(ref32.shape)}"))
            ok = False
            continue
        e = rel(t, ref32)
        if name.startswith("fp32"):
            passed = e <= FP32_MAX
            ok &= passed
            rows.append(dict(run=name, rel_error=e, bound=f"<= {FP32_MAX:g}", passed=passed, note=""))
        else:
            passed = e <= BF16_GROWTH_MAX * hf_bf16_err
            ok &= passed
            rows.append(dict(run=name, rel_error=e, bound=f"<= {BF16_GROWTH_MAX:g} x HF bf16", passed=passed,
                             note=f"HF bf16 vs HF fp32: {hf_bf16_err:.2e}; ratio {e / hf_bf16_err:.2f}"))
    count_ok = tokens == ref32.shape[0] and (proc_tokens is None or proc_tokens == tokens)
    ok &= count_ok and shape_ok
    lines = [
        "# DeepSeek-OCR-2 vision path vs transformers DeepseekOcr2",
        "",
        f"- GPU: {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none (CPU)'}; "
        f"torch {torch.__version__}; transformers {__import__('transformers').__version__}",
        f"- page {Path(a.page).name}: llmprof grid {grid[0]}x{grid[1]} (cols x rows), {tokens} image tokens; "
        f"reference embeddings {list(ref32.shape)}; transformers' processor: "
        f"{proc_tokens if proc_tokens is not None else '-'} tokens ({proc_note})",
        f"- seeded weights (seed {a.seed}) written under the official names; both sides encode llmprof's pixels",
        "",
        "| llmprof run | rel L2 error vs HF fp32 | bound | result | note |",
        "|---|---:|---|---|---|",
    ]
    for r in rows:
        err = "-" if r["rel_error"] is None else f"{r['rel_error']:.2e}"
        lines.append(f"| {r['run']} | {err} | {r['bound']} | {'pass' if r['passed'] else 'FAIL'} | {r['note']} |")
    lines.append(f"| image-token count | {tokens} vs {ref32.shape[0]} rows | equal | "
                 f"{'pass' if count_ok else 'FAIL'} | processor: {proc_tokens} |")
    table = "\n".join(lines) + "\n"
    print(table)
    result = dict(rows=rows, image_tokens=tokens, grid=grid, reference_rows=int(ref32.shape[0]),
                  processor_tokens=proc_tokens, processor_note=proc_note, hf_bf16_rel_error=hf_bf16_err,
                  passed=bool(ok))
    for d in [work] + ([Path(a.out_dir)] if a.out_dir else []):
        d.mkdir(parents=True, exist_ok=True)
        (d / "ocr2_table.md").write_text(table)
        (d / "ocr2_results.json").write_text(json.dumps(result, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
