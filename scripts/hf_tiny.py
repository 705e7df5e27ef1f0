#!/usr/bin/env python3
"""Tiny checkpoints of each decoder family built by HF transformers on the CPU, with transformers'
own logits, for the parity of `llmprof debug logits` with them (#42's CPU check;
tests/worker/hf_parity.rs runs it and compares).

  hf_tiny.py make --model-type qwen3 --out DIR [--seed 0] [--seq 12] [--greedy 12]
      (--model-type a,b,c: each into DIR/<type>, in one process)
      DIR/config.json + DIR/model.safetensors (save_pretrained: the official names and layout),
      DIR/tokenizer.json + tokenizer_config.json (a 300-id BPE with a chat template),
      DIR/ids.json (prompt ids), DIR/ref.safetensors: prompt_last_logits [vocab] (fp32, eager
      attention) and greedy_ids [n] (greedy, EOS ignored), as `llmprof debug logits` writes them
  hf_tiny.py prompt-ids --dir DIR --prompt TEXT
      the ids transformers gives TEXT as one user message through DIR's chat template

Needs torch, transformers (5.17 or later) and safetensors. The architecture is transformers'
own default for the model type at small dimensions (AutoConfig.for_model), so a family's
config.json keys and tensor names are exactly what the released checkpoints use.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# Small dimensions every family shares; per family, what its released configs set that the
# defaults do not (a tied head where the small models tie it, both layer kinds).
COMMON = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, head_dim=16,
              max_position_embeddings=2048, bos_token_id=1, eos_token_id=2, pad_token_id=0,
              rms_norm_eps=1e-6)
FAMILIES = {
    "llama": dict(tie_word_embeddings=False),
    "qwen2": dict(tie_word_embeddings=True),
    "qwen3": dict(tie_word_embeddings=True),
    # Mistral's released configs set a sliding window (v0.1: 4096); here 8 keys, which the
    # 12-token prompt and the greedy tokens pass (prefill and decode steps both slide).
    "mistral": dict(tie_word_embeddings=False, sliding_window=8),
    # Phi-3: q/k/v and gate/up stored as one weight each; Phi-3-mini-4k's window (2047) is wider
    # than the run.
    "phi3": dict(tie_word_embeddings=False, sliding_window=2047),
    # Gemma 3 (gemma3_text): a local (sliding, its own RoPE base) and a global layer, GeGLU,
    # sandwich norms, q/k norms, embeddings × √hidden; the local layer's window (8) is passed.
    # The global layer's RoPE linearly scaled ×8, as in Gemma 3 4B to 27B; scores scaled by
    # 1/√24 with head_dim 16, as 27B's 1/√168 with head_dim 128.
    "gemma3_text": dict(tie_word_embeddings=True, query_pre_attn_scalar=24, sliding_window=8,
                        layer_types=["sliding_attention", "full_attention"],
                        rope_parameters={
                            "full_attention": {"rope_type": "linear", "factor": 8.0,
                                               "rope_theta": 1000000.0},
                            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
    # Mixtral: every layer a mixture (4 experts here, top-2, renormalised).
    "mixtral": dict(tie_word_embeddings=False, num_local_experts=4, num_experts_per_tok=2,
                    sliding_window=None),
    # Qwen3-MoE as Qwen3-30B-A3B sets it (top-k renormalised), with one dense layer so that both
    # layer kinds are present.
    "qwen3_moe": dict(tie_word_embeddings=False, num_experts=8, num_experts_per_tok=2,
                      moe_intermediate_size=32, norm_topk_prob=True, decoder_sparse_step=1,
                      mlp_only_layers=[1]),
    # DeepSeek-V2 with multi-head latent attention (no q bottleneck, as V2-Lite), YaRN with
    # mscale != mscale_all_dim (so cos/sin and the softmax scale both move), a dense first layer
    # and two MoE layers (the last layer's routing of earlier tokens never reaches the last
    # logits) of 8 experts in 4 groups (group-limited greedy: the top-2 from the best
    # group alone, so that the limit changes the choice), 2 shared experts, a routed scaling
    # factor.
    "deepseek_v2": dict(num_hidden_layers=3, tie_word_embeddings=False, num_key_value_heads=4, head_dim=8, kv_lora_rank=32,
                        q_lora_rank=None, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
                        n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                        n_shared_experts=2, first_k_dense_replace=1, topk_method="group_limited_greedy",
                        n_group=4, topk_group=1, routed_scaling_factor=1.5,
                        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                         "original_max_position_embeddings": 64, "beta_fast": 32,
                                         "beta_slow": 1, "mscale": 0.9, "mscale_all_dim": 0.7}),
    # DeepSeek-V3: the q bottleneck, sigmoid scores with a correction bias (made non-zero), the
    # best of 4 groups by its two best experts, renormalised top-2 × 2.5, 1 shared expert.
    "deepseek_v3": dict(num_hidden_layers=3, tie_word_embeddings=False, num_key_value_heads=4, head_dim=8, kv_lora_rank=32,
                        q_lora_rank=24, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
                        n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                        n_shared_experts=1, first_k_dense_replace=1, n_group=4, topk_group=1,
                        norm_topk_prob=True, routed_scaling_factor=2.5, rope_interleave=True,
                        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                         "original_max_position_embeddings": 64, "beta_fast": 32,
                                         "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 0.8}),
}


def config(model_type: str) -> dict:
    if model_type not in FAMILIES:
        raise SystemExit(f"unknown model type {model_type} (one of {', '.join(FAMILIES)})")
    return {**COMMON, **FAMILIES[model_type]}


# A chat template in the style of the released ones (one user message, generation prompt).
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def write_tokenizer(out: Path) -> None:
    """A byte-level BPE of 300 ids (inside the tiny vocabulary) trained on a few sentences, with
    tokenizer_config.json's chat template: what a checkpoint folder carries for `dataset=prompts`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<pad>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    text = ["Summarise the profile of a decode step.", "Where does the time of a layer go?",
            "The quick brown fox jumps over the lazy dog."] * 20
    tok.train_from_iterator(text, trainer)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps(
        {"chat_template": CHAT_TEMPLATE, "bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"}))


def cmd_make(a) -> int:
    # Several model types in one process (DIR/<type> each): torch and transformers load once.
    types = a.model_type.split(",")
    if len(types) > 1:
        for t in types:
            a.model_type = t
            out = a.out
            a.out = str(Path(out) / t)
            make_one(a)
            a.out = out
        return 0
    return make_one(a)


def make_one(a) -> int:
    import torch
    from safetensors.torch import save_file
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(a.seed)
    cfg = AutoConfig.for_model(a.model_type, **config(a.model_type))
    cfg._attn_implementation = "eager"
    model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(a.seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            # Norm weights away from 1 so that a norm applied to the wrong tensor shows.
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                std = 1.0 if "embed_tokens" in name else (p.shape[-1] ** -0.5 if p.dim() == 2 else 0.02)
                p.copy_(torch.randn(p.shape, generator=g) * std)
        for name, b in model.named_buffers():
            # DeepSeek-V3's router bias (zeros at init) shifts the choice only: make it count.
            if name.endswith("e_score_correction_bias"):
                b.copy_(0.1 * torch.randn(b.shape, generator=g))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    write_tokenizer(out)
    ids = torch.randint(3, cfg.vocab_size, (a.seq,), generator=g).tolist()
    (out / "ids.json").write_text(json.dumps(ids))
    x = torch.tensor([ids])
    model.generation_config.eos_token_id = None
    with torch.no_grad():
        logits = model(x).logits[0, -1].float()
        gen = model.generate(x, max_new_tokens=a.greedy, do_sample=False, pad_token_id=0)
    save_file({"prompt_last_logits": logits.contiguous(),
               "greedy_ids": gen[0, len(ids):].to(torch.int64).contiguous()},
              str(out / "ref.safetensors"))
    print(json.dumps({"model_type": a.model_type, "dir": str(out), "tensors": len(model.state_dict())}))
    return 0


def cmd_prompt_ids(a) -> int:
    """The ids transformers gives a prompt through the folder's tokenizer and chat template."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(a.dir)
    ids = tok.apply_chat_template([{"role": "user", "content": a.prompt}], add_generation_prompt=True,
                                  tokenize=True)
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    print(json.dumps(list(ids)))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("make")
    p.add_argument("--model-type", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seq", type=int, default=12)
    p.add_argument("--greedy", type=int, default=12)
    p.set_defaults(fn=cmd_make)
    p = sub.add_parser("prompt-ids")
    p.add_argument("--dir", required=True)
    p.add_argument("--prompt", required=True)
    p.set_defaults(fn=cmd_prompt_ids)
    a = ap.parse_args(argv)
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
