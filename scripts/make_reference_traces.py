#!/usr/bin/env python3
"""Make reference Kineto traces with plain torch.profiler + HF transformers (no llmprof code).

What for: test fixtures for `llmprof analyze trace` (see docs/analyze-trace.md). The traces
come from a profiler that is not ours, so they check that the analyzer reads real-world
Kineto JSON, not just what llmprof writes. Made on the GPU machine
(torch 2.11 + cu130, transformers 5.x; no Hub access needed: the model is a small random Llama).

    python scripts/make_reference_traces.py OUT_DIR [--device cuda] [--new-tokens N]

Writes, each with key_averages.json and meta.json beside it:
  OUT_DIR/hf_eager/trace.json       prefill + N eager decode steps on a DynamicCache, then one
                                    model.generate(); ProfilerStep#0 = prefill, #1..#N = decode,
                                    #N+1 = generate (N+1 new tokens, so also N decode forwards;
                                    --no-generate leaves it out: the trace is then ~half the size).
  OUT_DIR/hf_cuda_graph/trace.json  eager prefill on a StaticCache, then the 1-token decode
                                    forward captured once with torch.cuda.graph and replayed N
                                    times (cudaGraphLaunch; kernels carry its correlation id).
                                    ProfilerStep#0 = prefill, #1..#N = decode. CUDA only.
Ranges: record_function("prefill") / ("decode") / ("generate").
"""
import argparse
import json
import os
import warnings

import torch
import transformers
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM, StaticCache

warnings.filterwarnings("ignore", message="Profiler won't be using warmup")
warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle")

CFG = dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
           intermediate_size=1408, vocab_size=32000, max_position_embeddings=512,
           tie_word_embeddings=False)
PROMPT_LEN, SEED = 64, 1234


def key_averages(prof):
    def t(e, *names):
        for n in names:
            if hasattr(e, n):
                return float(getattr(e, n))
        return 0.0
    rows = [dict(name=e.key, count=e.count,
                 self_device_time_total_us=t(e, "self_device_time_total", "self_cuda_time_total"),
                 device_time_total_us=t(e, "device_time_total", "cuda_time_total"),
                 self_cpu_time_total_us=t(e, "self_cpu_time_total"),
                 cpu_time_total_us=t(e, "cpu_time_total"))
            for e in prof.key_averages()]
    return sorted(rows, key=lambda r: (-r["device_time_total_us"], -r["cpu_time_total_us"]))


def profiled(out_dir, device, steps):
    """A profile whose ProfilerStep#0..steps-1 are all recorded; trace written when it closes."""
    os.makedirs(out_dir, exist_ok=True)

    def ready(prof):
        prof.export_chrome_trace(os.path.join(out_dir, "trace.json"))
        with open(os.path.join(out_dir, "key_averages.json"), "w") as f:
            json.dump(key_averages(prof), f, indent=1)

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    return profile(activities=acts, record_shapes=True, on_trace_ready=ready,
                   schedule=schedule(wait=0, warmup=0, active=steps, repeat=1))


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def run_eager(model, prompt, n, device, out_dir, with_generate=True):
    def prefill_and_decode(prof=None):
        cache = DynamicCache(config=model.config)
        with record_function("prefill"):
            logits = model(input_ids=prompt, past_key_values=cache, use_cache=True,
                           logits_to_keep=1).logits
            tok = logits[:, -1:].argmax(-1)
        toks = [tok]
        if prof:
            prof.step()
        for _ in range(n):
            with record_function("decode"):
                logits = model(input_ids=tok, past_key_values=cache, use_cache=True).logits
                tok = logits[:, -1:].argmax(-1)
            toks.append(tok)
            if prof:
                prof.step()
        return torch.cat(toks, dim=1)

    gen_kw = dict(attention_mask=torch.ones_like(prompt), max_new_tokens=n + 1, min_new_tokens=n + 1,
                  do_sample=False, pad_token_id=0)
    prefill_and_decode()                      # warm-up, not profiled (allocator, cuBLAS, ...)
    model.generate(prompt, **gen_kw)
    sync(device)
    with profiled(out_dir, device, n + 1 + with_generate) as prof:
        toks = prefill_and_decode(prof)
        if with_generate:
            with record_function("generate"):
                gen = model.generate(prompt, **gen_kw)[:, prompt.shape[1]:]
            sync(device)
            prof.step()
    res = dict(tokens=toks[0].tolist())
    if with_generate:
        res.update(generate_tokens=gen[0].tolist(), generate_matches_manual=toks.tolist() == gen.tolist())
    return res


def run_cuda_graph(model, prompt, n, device, out_dir, eager_tokens):
    p = prompt.shape[1]
    # StaticCache(config, max_cache_len): layers allocate [B, kv_heads, max_cache_len, head_dim]
    # lazily on the first update (the prefill) and then keep their addresses. Each layer tracks
    # its fill level in a device tensor (cumulative_length) that update() bumps in place, so a
    # replayed graph writes K/V at the right slot by itself; we only feed position_ids.
    cache = StaticCache(config=model.config, max_cache_len=p + n + 8)
    ids_buf = torch.zeros(1, 1, dtype=torch.long, device=device)
    pos_buf = torch.zeros(1, 1, dtype=torch.long, device=device)

    def prefill():
        logits = model(input_ids=prompt, past_key_values=cache, use_cache=True, logits_to_keep=1).logits
        ids_buf.copy_(logits[:, -1:].argmax(-1))
        pos_buf.fill_(p)
        return ids_buf.clone()

    def decode_forward():
        return model(input_ids=ids_buf, position_ids=pos_buf, past_key_values=cache, use_cache=True).logits

    prefill()                                 # allocates the cache, so capture sees fixed addresses
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):             # warm-up on a side stream, as the PyTorch docs show
        for _ in range(3):
            decode_forward()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_logits = decode_forward()
    cache.reset()                             # zero_() in place: the captured addresses stay valid
    sync(device)

    with profiled(out_dir, device, n + 1) as prof:
        with record_function("prefill"):
            toks = [prefill()]
        prof.step()
        for _ in range(n):
            with record_function("decode"):
                graph.replay()
                ids_buf.copy_(static_logits[:, -1:].argmax(-1))
                pos_buf.add_(1)
                toks.append(ids_buf.clone())
            prof.step()
        sync(device)
    toks = torch.cat(toks, dim=1)[0].tolist()
    return dict(tokens=toks, matches_eager=toks == eager_tokens)


def describe(path):
    print(f"{path}  {os.path.getsize(path):,} bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--new-tokens", type=int, default=8, help="decode steps N (default 8)")
    ap.add_argument("--no-generate", action="store_true", help="leave the model.generate() step out")
    a = ap.parse_args()
    device, n = a.device, a.new_tokens
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    if device == "cuda":
        # Known profiler workaround: let CUPTI initialise before any graph is captured,
        # or kernels of a graph captured earlier may be missing/broken in the trace.
        torch.profiler._utils._init_for_cuda_graphs()

    torch.manual_seed(SEED)
    cfg = LlamaConfig(**CFG)
    model = LlamaForCausalLM._from_config(cfg, dtype=dtype, attn_implementation="sdpa")
    model = model.to(device).eval()
    prompt = torch.randint(3, CFG["vocab_size"], (1, PROMPT_LEN),
                           generator=torch.Generator().manual_seed(SEED)).to(device)
    meta = dict(torch=torch.__version__, transformers=transformers.__version__,
                gpu=torch.cuda.get_device_name() if device == "cuda" else None,
                device=device, dtype=str(dtype), seed=SEED, prompt_len=PROMPT_LEN, decode_steps=n,
                attn_implementation=model.config._attn_implementation, config=CFG)

    runs = [("hf_eager", None), ("hf_cuda_graph", None)]
    with torch.inference_mode():
        out = os.path.join(a.out_dir, "hf_eager")
        runs[0] = (out, run_eager(model, prompt, n, device, out, not a.no_generate))
        if device == "cuda":
            out = os.path.join(a.out_dir, "hf_cuda_graph")
            runs[1] = (out, run_cuda_graph(model, prompt, n, device, out, runs[0][1]["tokens"]))
        else:
            runs.pop()
            print("--device cpu: skipping hf_cuda_graph (needs CUDA)")

    for out, result in runs:
        with open(os.path.join(out, "meta.json"), "w") as f:
            json.dump(dict(meta, mode=os.path.basename(out), **result), f, indent=1)
        for name in ("trace.json", "key_averages.json", "meta.json"):
            describe(os.path.join(out, name))
        print(f"  tokens: {result}")


if __name__ == "__main__":
    main()
