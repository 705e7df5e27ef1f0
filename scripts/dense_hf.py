#!/usr/bin/env python3
"""HF transformers side of the dense decoder checks: the presets (qwen2_5_0_5b, qwen2_5_7b,
llama3_1_8b: the config.json of each from conf/model/dense_decoder/arch/*.yaml) and the released
configs (tests/fixtures/released_configs/<name>.json: the config.json of a released model of each
model type llmprof reads), seeded weights under the official names, and reference logits / greedy
tokens, for scripts/verify_vs_hf.sh and scripts/bench_vs_hf.py. Runs on the GPU machine with
torch + transformers 5.17 (scripts/hf_weights.py writes the checkpoints).

  dense_hf.py make-weights (--preset llama3_1_8b | --config FILE) [--layers N] [--first-dense K] \
      --out DIR [--seed 0] [--seq 64] [--store-dtype auto|fp32|bf16]
      DIR/config.json (the dict used), DIR/model.safetensors (official names and layout, as
      save_pretrained writes them), DIR/ids.json (--seq prompt ids), DIR/weights_meta.json.
      --config: the released config with N layers (and, DeepSeek only, K leading dense layers,
      first_k_dense_replace), refused when N layers lack a layer kind of the released model
      (dense/MoE feed-forward, sliding/full attention as transformers lays them out); e.g.
      Gemma 3 derives layer_types from sliding_window_pattern (6): layer i is global when
      (i + 1) % 6 == 0, so N >= 6 has its first global layer, layer 5.
      --store-dtype auto: fp32, or bf16 above 32 GiB of fp32 (values drawn in fp32, rounded once:
      an fp32 check upcasts the same numbers on both sides); --reuse: nothing to do when DIR
      already holds the same weights (weights_meta.json)
  dense_hf.py trim-config --config FILE [--layers N] [--first-dense K] --out PATH
      the config.json make-weights would write, alone (scripts/bench_vs_hf.sh)
  dense_hf.py reference-logits --dir DIR --ids DIR/ids.json --dtype fp32,bf16 --greedy 64 \
      --out 'REF/logits_{dtype}.safetensors' [--device cuda] [--experts-impl grouped_mm]
      transformers' from_pretrained of DIR in each dtype (sdpa attention on CUDA, eager on the
      CPU; stacked experts through --experts-impl): prompt_last_logits [vocab] (fp32),
      greedy_ids [n] (EOS ignored) and greedy_top2_gap [n], as `llmprof debug logits` writes them
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conf_arch import arch, presets  # noqa: E402
from hf_weights import init_std, layer_kinds, released_config, write_seeded  # noqa: E402

# The architecture of each preset is conf/model/dense_decoder/arch/<preset>.yaml, whose keys are
# config.json's. What config.json adds is the transformers class: a Qwen2 block has q/k/v biases
# and no o_proj bias (attention_bias in the YAML), a Llama block has no bias anywhere (Llama's
# attention_bias would add one to o_proj too, so a biased preset cannot be a Llama).
QWEN2 = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
         "use_sliding_window": False}
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
         "mlp_bias": False}


def log(msg: str) -> None:
    print(f"[dense_hf] {msg}", file=sys.stderr, flush=True)


def config_dict(preset: str, layers: int | None = None) -> dict:
    """config.json of `preset`: its conf/ architecture with the transformers class it implies."""
    if preset not in presets("dense_decoder"):
        raise SystemExit(f"unknown preset {preset} (one of {', '.join(presets('dense_decoder'))})")
    d = dict(arch("dense_decoder", preset))
    if d.get("attention_bias"):
        # Qwen2's config.json has neither: the biases are the class's, head_dim is hidden ÷ heads.
        d.pop("attention_bias")
        if d.get("head_dim") == d["hidden_size"] // d["num_attention_heads"]:
            d.pop("head_dim")
        d.update(QWEN2)
    else:
        d.update(LLAMA)
    if d.get("rope_scaling") is None:
        d.pop("rope_scaling", None)
    if layers:
        d["num_hidden_layers"] = layers
    return d


def build(d: dict, device: str, dtype: str, seed: int | None):
    """AutoModelForCausalLM from config dict `d` (fp32 on `device`, then cast to `dtype`); seeded
    weights by hf_weights' rule (the values make-weights writes) when `seed` is given."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(**d)
    cfg._attn_implementation = "sdpa" if device == "cuda" else "eager"
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.float32)
    if seed is not None:
        g = torch.Generator(device="cpu").manual_seed(seed)
        with torch.no_grad():
            for name, p in model.named_parameters():
                std = init_std(name, p.shape)
                if std is None:
                    p.fill_(1.0)
                else:
                    p.copy_(torch.randn(p.shape, generator=g) * std)
    model = model.to({"fp32": torch.float32, "bf16": torch.bfloat16}[dtype])
    return model.eval()


def build_random(path: str | Path, device: str, dtype: str, seed: int):
    """transformers' CausalLM of the config.json at `path` for speed benchmarks
    (scripts/bench_vs_hf.py): built on `device` directly in `dtype` with transformers' own random
    initialisation (torch seeded with `seed`; RoPE buffers stay fp32), sdpa attention on CUDA,
    transformers' default experts implementation (grouped_mm) where the model has experts."""
    import torch
    from transformers import AutoModelForCausalLM

    from hf_weights import hf_config

    cfg = hf_config(json.loads(Path(path).read_text()))
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(
            cfg, dtype={"fp32": torch.float32, "bf16": torch.bfloat16}[dtype],
            attn_implementation="sdpa" if device == "cuda" else "eager")
    return model.eval()


def chosen_config(a) -> tuple[dict, str]:
    if (a.preset is None) == (a.config is None):
        raise SystemExit("give exactly one of --preset and --config")
    if a.preset is not None:
        if a.first_dense is not None:
            raise SystemExit("--first-dense goes with --config (DeepSeek configs)")
        return config_dict(a.preset, a.layers), a.preset
    return released_config(a.config, a.layers, a.first_dense), str(a.config)


def cmd_make_weights(a) -> int:
    import torch

    d, source = chosen_config(a)
    out = Path(a.out)
    request = {"config": d, "seed": a.seed, "seq": a.seq, "store_dtype_requested": a.store_dtype}
    if a.reuse and (out / "weights_meta.json").is_file() and (out / "model.safetensors").is_file():
        old = json.loads((out / "weights_meta.json").read_text())
        if all(old.get(k) == v for k, v in request.items()) \
                and (out / "model.safetensors").stat().st_size >= old.get("bytes", 0):
            log(f"--reuse: {out} already holds these weights")
            return 0
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    kinds = layer_kinds(d)
    info = write_seeded(d, out / "model.safetensors", a.seed, a.store_dtype, log)
    (out / "config.json").write_text(json.dumps(d, indent=2) + "\n")
    g = torch.Generator().manual_seed(a.seed + 1)
    ids = torch.randint(0, d["vocab_size"], (a.seq,), generator=g).tolist()
    (out / "ids.json").write_text(json.dumps(ids))
    meta = {"source": source, "model_type": d["model_type"], "layers": d["num_hidden_layers"],
            "layer_kinds": kinds, **request, **info}
    (out / "weights_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    log(f"{source} ({d['num_hidden_layers']} layers: {', '.join(sorted(set(kinds)))}): "
        f"{info['tensors']} tensors, {info['bytes'] / 1e9:.2f} GB {info['store_dtype']}, {a.seq} ids -> {out} "
        f"in {time.time() - t0:.1f}s")
    return 0


def cmd_trim_config(a) -> int:
    d = released_config(a.config, a.layers, a.first_dense)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(d, indent=2) + "\n")
    log(f"{a.config}: {d['num_hidden_layers']} layers -> {a.out}")
    return 0


def load_reference(folder: Path, device, dtype, experts_impl: str):
    """transformers' from_pretrained of `folder` (strict: no missing, unexpected or mismatched
    tensor), sdpa attention on CUDA (eager on the CPU), `experts_impl` where the model has
    stacked experts."""
    import torch
    from transformers import AutoModelForCausalLM

    kw = {"dtype": dtype, "attn_implementation": "sdpa" if device.type == "cuda" else "eager",
          "output_loading_info": True}
    if device.type == "cuda":
        kw["device_map"] = str(device)
    if any(k.endswith("/moe") for k in layer_kinds(json.loads((folder / "config.json").read_text()))):
        kw["experts_implementation"] = experts_impl
    model, info = AutoModelForCausalLM.from_pretrained(str(folder), **kw)
    bad = {k: v for k, v in info.items() if k in ("missing_keys", "unexpected_keys", "mismatched_keys") and v}
    if bad:
        raise SystemExit(f"{folder}: the checkpoint does not match transformers' model: {bad}")
    return model.to(device).eval() if device.type != "cuda" else model.eval()


def greedy(model, ids: list[int], n: int, device):
    """Last-position prompt logits (fp32), then `n` greedy tokens over a DynamicCache (prefill,
    one token per step; no logits processors, no EOS stop) and the top-2 logit gap at each."""
    import torch
    from transformers import DynamicCache

    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        x = torch.tensor([ids], dtype=torch.long, device=device)
        logits = model(input_ids=x, past_key_values=cache, use_cache=True).logits[:, -1].float()
        prompt = logits[0].clone()
        toks, gaps = [], []
        for i in range(n):
            top2 = logits[0].topk(2).values
            gaps.append(float(top2[0] - top2[1]))
            nxt = logits.argmax(-1)
            toks.append(int(nxt))
            if i + 1 == n:
                break
            logits = model(input_ids=nxt[:, None], past_key_values=cache, use_cache=True).logits[:, -1].float()
    return prompt.cpu(), torch.tensor(toks, dtype=torch.int64), torch.tensor(gaps, dtype=torch.float32)


def cmd_reference_logits(a) -> int:
    import torch
    from safetensors.torch import save_file
    from verify_vs_hf import pick_device, ref_metadata, set_fp32_precision

    folder = Path(a.dir)
    ids = json.loads(Path(a.ids).read_text())
    device = pick_device(a.device)
    set_fp32_precision()
    for dt in a.dtype.split(","):
        t0 = time.time()
        model = load_reference(folder, device, {"fp32": torch.float32, "bf16": torch.bfloat16}[dt], a.experts_impl)
        experts = getattr(model.config, "_experts_implementation", None)
        log(f"{dt}: {type(model).__name__} ({model.config._attn_implementation} attention, {experts} experts) "
            f"loaded on {device} in {time.time() - t0:.1f}s")
        t1 = time.time()
        try:
            logits, toks, gaps = greedy(model, ids, a.greedy, device)
        except RuntimeError as e:
            # Safety net, as in verify_vs_hf.py: should grouped_mm refuse this dtype or device.
            if experts in (None, "eager"):
                raise
            log(f"{dt}: experts implementation {experts} failed ({e}); retrying with eager")
            model.set_experts_implementation("eager")
            logits, toks, gaps = greedy(model, ids, a.greedy, device)
        path = a.out.format(dtype=dt)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        save_file({"prompt_last_logits": logits.contiguous(), "greedy_ids": toks, "greedy_top2_gap": gaps},
                  path, metadata=ref_metadata(model.config, device, dt))
        log(f"{dt}: prompt {len(ids)} + {a.greedy} greedy in {time.time() - t1:.1f}s -> {path} "
            f"(first ids {toks[:8].tolist()})")
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("make-weights")
    p.add_argument("--preset", default=None, choices=presets("dense_decoder"))
    p.add_argument("--config", default=None, help="a released config.json (tests/fixtures/released_configs/)")
    p.add_argument("--layers", type=int, default=None, help="fewer layers than the real model (time, memory)")
    p.add_argument("--first-dense", type=int, default=None,
                   help="DeepSeek: leading dense layers (first_k_dense_replace), so few layers hold both kinds")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--store-dtype", default="auto", choices=["auto", "fp32", "bf16"])
    p.add_argument("--reuse", action="store_true",
                   help="keep DIR as it is when its weights_meta.json records the same config, seed, seq and store dtype")
    p.set_defaults(fn=cmd_make_weights)
    p = sub.add_parser("trim-config")
    p.add_argument("--config", required=True)
    p.add_argument("--layers", type=int, default=None)
    p.add_argument("--first-dense", type=int, default=None)
    p.add_argument("--out", required=True)
    p.set_defaults(fn=cmd_trim_config)
    p = sub.add_parser("reference-logits")
    p.add_argument("--dir", required=True)
    p.add_argument("--ids", required=True)
    p.add_argument("--dtype", default="fp32,bf16")
    p.add_argument("--greedy", type=int, default=64)
    p.add_argument("--out", required=True, help="path with {dtype}")
    p.add_argument("--device", default=None)
    p.add_argument("--experts-impl", default="grouped_mm", choices=["grouped_mm", "eager", "batched_mm"],
                   help="transformers experts implementation of MoE models (grouped_mm is its default)")
    p.set_defaults(fn=cmd_reference_logits)
    a = ap.parse_args(argv)
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
