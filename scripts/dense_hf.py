#!/usr/bin/env python3
"""HF transformers side of the dense decoder presets (qwen2_5_0_5b, qwen2_5_7b, llama3_1_8b):
the config.json of each (the values conf/model/dense_decoder/arch/*.yaml holds), seeded weights
under the official names, and reference logits / greedy tokens, for scripts/verify_vs_hf.sh and
scripts/bench_vs_hf.py. Runs on the GPU machine with torch + transformers 5.17 + safetensors.

  dense_hf.py make-weights --preset llama3_1_8b --layers 4 --out DIR [--seed 0] [--seq 64]
      DIR/config.json, DIR/model.safetensors (official names, fp32), DIR/ids.json
  dense_hf.py reference-logits --dir DIR --ids DIR/ids.json --dtype fp32,bf16 --greedy 64 \
      --out 'REF/logits_{dtype}.safetensors'
      prompt_last_logits [vocab] (fp32) and greedy_ids [n], as `llmprof debug logits` writes them
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conf_arch import arch, presets  # noqa: E402

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
    """AutoModelForCausalLM from config dict `d`; seeded weights like llmprof's synthetic ones
    (linear 1/sqrt(fan_in), embeddings 1, biases 0.02, norms 1) when `seed` is given."""
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
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                    continue
                std = 1.0 if "embed_tokens" in name else (p.shape[1] ** -0.5 if p.dim() == 2 else 0.02)
                p.copy_(torch.randn(p.shape, generator=g) * std)
    model = model.to({"fp32": torch.float32, "bf16": torch.bfloat16}[dtype])
    return model.eval()


def cmd_make_weights(a) -> int:
    import torch
    from safetensors.torch import save_file

    d = config_dict(a.preset, a.layers)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    model = build(d, "cpu", "fp32", a.seed)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()
             if not (d.get("tie_word_embeddings") and k == "lm_head.weight")}
    save_file(state, str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps(d, indent=2))
    g = torch.Generator().manual_seed(a.seed + 1)
    ids = torch.randint(0, d["vocab_size"], (a.seq,), generator=g).tolist()
    (out / "ids.json").write_text(json.dumps(ids))
    log(f"{a.preset} ({d['num_hidden_layers']} layers): {len(state)} tensors, {a.seq} ids -> {out}")
    return 0


def cmd_reference_logits(a) -> int:
    import torch
    from safetensors.torch import load_file, save_file

    d = json.loads((Path(a.dir) / "config.json").read_text())
    ids = json.loads(Path(a.ids).read_text())
    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    weights = load_file(str(Path(a.dir) / "model.safetensors"))
    for dtype in a.dtype.split(","):
        model = build(d, device, "fp32", None)
        missing, unexpected = model.load_state_dict(weights, strict=False)
        missing = [m for m in missing if not (d.get("tie_word_embeddings") and m == "lm_head.weight")]
        if missing or unexpected:
            raise SystemExit(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
        if d.get("tie_word_embeddings"):
            model.tie_weights()
        model = model.to({"fp32": torch.float32, "bf16": torch.bfloat16}[dtype])
        x = torch.tensor([ids], device=device)
        # Greedy without stopping at EOS (as `llmprof debug logits` runs it).
        model.generation_config.eos_token_id = None
        with torch.no_grad():
            logits = model(x).logits[0, -1].float().cpu()
            out = model.generate(x, max_new_tokens=a.greedy, do_sample=False, pad_token_id=0)
        greedy = out[0, len(ids):].cpu().to(torch.int64)
        path = a.out.format(dtype=dtype)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        save_file({"prompt_last_logits": logits.contiguous(), "greedy_ids": greedy.contiguous()}, path)
        log(f"{dtype}: {path}")
        del model
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("make-weights")
    p.add_argument("--preset", required=True, choices=presets("dense_decoder"))
    p.add_argument("--layers", type=int, default=None, help="fewer layers than the real model (time)")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seq", type=int, default=64)
    p.set_defaults(fn=cmd_make_weights)
    p = sub.add_parser("reference-logits")
    p.add_argument("--dir", required=True)
    p.add_argument("--ids", required=True)
    p.add_argument("--dtype", default="fp32,bf16")
    p.add_argument("--greedy", type=int, default=64)
    p.add_argument("--out", required=True, help="path with {dtype}")
    p.add_argument("--device", default=None)
    p.set_defaults(fn=cmd_reference_logits)
    a = ap.parse_args(argv)
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
