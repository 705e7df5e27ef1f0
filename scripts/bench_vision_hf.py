#!/usr/bin/env python3
"""Vision reference timings from HF transformers, the peer figure for llmprof's vision region
(scripts/bench_vs_hf.sh runs it; docs/performance.md records it).

Per page, on the GPU, bf16, SDPA, seeded weights, CUDA-event timed (median of --repeats after
--warmup), pages batched as llmprof batches them (all views of one size in one call):
- DeepSeek-OCR (gundam 2x3 page): transformers' DeepseekOcr2 SAM encoder at DeepSeek-OCR's
  configuration (net_3 512->1024) on 1 global 1024^2 view + 6 crops of 640^2, then a CLIP-L
  vision tower of DeepSeek-OCR's dimensions (transformers' CLIPVisionModel: 1024 wide, 24 layers,
  16 heads, MLP 4096, patch 14) on as many tokens as DeepSeek-OCR's CLIP sees (257 for a 1024^2
  view, 101 for a 640^2 crop: image sizes 224 and 140). The CLIP input is pixels, not SAM
  features, which costs one small patch-embedding conv more than DeepSeek-OCR's CLIP.
- DeepSeek-OCR-2 (2x3 page): transformers' DeepseekOcr2 vision tower (SAM + Qwen2 encoder with
  queries) on 1 global 1024^2 view + 6 tiles of 768^2.
Prints a markdown table (ms per page) and writes --out-json.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

SCRIPT_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPT_DIR))
from verify_ocr2_vs_hf import build_hf  # noqa: E402
from verify_vs_hf import REAL_SAM, build_hf_sam, init_params  # noqa: E402


def timed(fn, warmup: int, repeats: int) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def clip_l(image_size: int):
    from transformers import CLIPVisionConfig, CLIPVisionModel

    cfg = CLIPVisionConfig(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24,
                           num_attention_heads=16, patch_size=14, image_size=image_size,
                           attn_implementation="sdpa")
    with torch.device("cuda"):
        m = CLIPVisionModel(cfg)
    return m.eval().to(torch.bfloat16)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out-json", default=None)
    a = ap.parse_args()
    assert torch.cuda.is_available(), "the vision reference needs a GPU"
    torch.manual_seed(0)
    bf = torch.bfloat16
    rows = []
    sam = build_hf_sam(REAL_SAM, torch.device("cuda"))
    with torch.no_grad():
        init_params(list(sam.named_parameters()), 0, 0.02, "sam")
    sam = sam.to(bf)
    clip_g, clip_c = clip_l(224), clip_l(140)
    ocr2, _ = build_hf(torch.device("cuda"), 0)
    ocr2 = ocr2.to(bf)
    for b in [int(x) for x in a.batches.split(",")]:
        g = torch.randn(b, 3, 1024, 1024, device="cuda", dtype=bf)
        c640 = torch.randn(6 * b, 3, 640, 640, device="cuda", dtype=bf)
        c768 = torch.randn(6 * b, 3, 768, 768, device="cuda", dtype=bf)
        pg = torch.randn(b, 3, 224, 224, device="cuda", dtype=bf)
        pc = torch.randn(6 * b, 3, 140, 140, device="cuda", dtype=bf)
        try:
            with torch.no_grad():
                t_sam = timed(lambda: (sam(g), sam(c640)), a.warmup, a.repeats)
                t_clip = timed(lambda: (clip_g(pixel_values=pg), clip_c(pixel_values=pc)), a.warmup,
                               a.repeats)
                t_ocr2 = timed(lambda: ocr2.get_image_features(pixel_values=g, pixel_values_local=c768,
                                                               num_local_patches=[6] * b),
                               a.warmup, a.repeats)
        except torch.cuda.OutOfMemoryError as e:
            # HF's SAM materialises the relative-position bias per global layer; large batches
            # may not fit. The row says so instead of failing the benchmark.
            print(f"batch {b}: out of GPU memory ({str(e).splitlines()[0]})", file=sys.stderr, flush=True)
            rows.append(dict(batch=b, out_of_memory=True))
            del g, c640, c768, pg, pc
            torch.cuda.empty_cache()
            continue
        rows.append(dict(batch=b, deepseek_ocr_sam_ms_per_page=t_sam / b,
                         deepseek_ocr_clip_ms_per_page=t_clip / b,
                         deepseek_ocr_vision_ms_per_page=(t_sam + t_clip) / b,
                         deepseek_ocr2_vision_ms_per_page=t_ocr2 / b))
        print(f"batch {b}: {rows[-1]}", file=sys.stderr, flush=True)
    print("| batch | DeepSeek-OCR SAM | CLIP-L | SAM + CLIP | DeepSeek-OCR-2 vision |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        if r.get("out_of_memory"):
            print(f"| {r['batch']} | out of GPU memory | | | |")
            continue
        print(f"| {r['batch']} | {r['deepseek_ocr_sam_ms_per_page']:.1f} | {r['deepseek_ocr_clip_ms_per_page']:.1f} | "
              f"{r['deepseek_ocr_vision_ms_per_page']:.1f} | {r['deepseek_ocr2_vision_ms_per_page']:.1f} |")
    if a.out_json:
        Path(a.out_json).write_text(json.dumps(dict(gpu=torch.cuda.get_device_name(0), rows=rows), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
