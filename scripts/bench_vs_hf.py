#!/usr/bin/env python3
"""Python half of the speed benchmark of llmprof's DeepSeek-OCR workload against HF transformers.

scripts/bench_vs_hf.sh runs `llmprof stage1` once per batch size, then calls

    python3 scripts/bench_vs_hf.py --llmprof-run 1=DIR1 --llmprof-run 8=DIR8 ... \\
        [--new-tokens 128] [--prompt-len N] [--arch full|tiny|PRESET | --hf-config PATH] [--device cuda|cpu] \\
        [--dtype bf16|fp32] [--seed 0] [--repeats 3] [--skip-hf] [--out-md PATH] [--out-json PATH] \\
        [--llmprof-default-run 32=DIR] [--hf-vision-json PATH] \\
        [--llmprof-long-run 32=DIR --llmprof-long-default-run 32=DIR] \\
        [--llmprof-distinct-run 32=DIR]

It reads each run's metrics.json (docs/metrics-schema.md), times the HF reference decoder at the
same batch sizes, and prints one markdown table: llmprof, HF, their ratio (how many times better
llmprof is), the analytic floor from the run's peaks, and llmprof's fraction of that floor.
A `--llmprof-default-run` (the same workload with the model's default n-gram rule) adds the
default-config decode row: its TPOT against the rule-free run's at that batch size. With
`--hf-vision-json` (scripts/bench_vision_hf.py's output) the vision rows get HF's figure; long runs
(`--llmprof-long-run`, `--llmprof-long-default-run`: ~1,000-token pages, without and with the
default n-gram rule) add pages/s and the n-gram rule's TPOT cost over long pages; a run whose
Kineto pass ran adds the profiled ÷ timed row. A `--llmprof-distinct-run` (the batch over as many
distinct pages, each row its own token stream and experts) adds its decode tok/s against the
same floor, and a note comparing its step with the copies' run.

The reference is transformers 5.17's DeepSeek-OCR-2 text decoder (same design as DeepSeek-OCR's:
MHA + DeepSeek-V2 MoE) with random weights, wrapped as a causal LM (transformers has no text-only
ForCausalLM for it) and driven through `generate()`: random token ids of the prompt length, no
vision encoder. Prefill = median `generate(max_new_tokens=1)`; decode step = (median full
`generate(max_new_tokens=N)` - prefill) / (N - 1).

Needs python>=3.10; torch and transformers only without --skip-hf.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

SCRIPT_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPT_DIR))
from bench_rows import (  # noqa: E402
    MISSING,
    HfResult,
    LlmprofRun,
    default_rule_rows,
    distinct_rows,
    floors,
    kineto_rows,
    long_rows,
    ngram_rows,
    render_table,
    table_rows,
    vision_rows,
)


def log(msg: str) -> None:
    print(f"[bench_vs_hf] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# llmprof runs

def get(doc: Any, path: str, src: Path, required: bool = True) -> Any:
    """`doc` at the dotted `path` (list indices as numbers). A missing or null value is None, or
    exits naming the file and the field when `required`."""
    cur = doc
    for key in path.split("."):
        if isinstance(cur, list) and key.isdigit() and int(key) < len(cur):
            cur = cur[int(key)]
        elif isinstance(cur, dict) and key in cur:
            cur = cur[key]
        else:
            cur = None
        if cur is None:
            if required:
                raise SystemExit(f"{src}: required field `{path}` is missing or null")
            return None
    return cur


def read_run(batch: int, run_dir: Path) -> LlmprofRun:
    src = run_dir / "metrics.json"
    if not src.is_file():
        raise SystemExit(f"{run_dir}: no metrics.json (is it an llmprof stage1 run directory?)")
    try:
        doc = json.loads(src.read_text())
    except json.JSONDecodeError as e:
        raise SystemExit(f"{src}: not valid JSON ({e})") from e
    run = LlmprofRun(
        batch=batch,
        dir=str(run_dir),
        model=get(doc, "setup.model", src),
        dtype=get(doc, "setup.dtype", src),
        gpu=get(doc, "setup.gpu", src, required=False),
        version=get(doc, "llmprof_version", src),
        prompt_tokens=int(get(doc, "requests.0.prompt_tokens", src)),
        max_new_tokens=int(get(doc, "setup.max_new_tokens", src)),
        prefill_ms=float(get(doc, "stages.prefill.p50_ms", src)),
        vision_ms=get(doc, "stages.vision.p50_ms", src, required=False),
        step_ms=float(get(doc, "stages.decode_step.p50_ms", src)),
        peak_allocated_gib=get(doc, "memory.peak_allocated_gib", src, required=False),
        # runtime.optim and the family's model.optim (absent from runs recorded before it).
        switches={**get(doc, "optim.switches", src),
                  **{f"model.{k}": v for k, v in
                     (get(doc, "optim.model_switches", src, required=False) or {}).items()}},
        tpot_ms=get(doc, "serving.tpot_ms.p50_ms", src, required=False),
        e2e_ms=get(doc, "serving.e2e_ms.p50_ms", src, required=False),
        kineto_overhead_pct=get(doc, "kineto.overhead_pct", src, required=False),
        floor_ms=get(doc, "utilisation.floor_ms", src, required=False) or {},
    )
    size = int(get(doc, "setup.batch_size", src))
    if size != batch:
        raise SystemExit(f"{src}: setup.batch_size is {size}, but it was given as --llmprof-run {batch}=...")
    return run


def parse_run_arg(s: str) -> tuple[int, Path]:
    batch, sep, path = s.partition("=")
    if not sep or not batch.isdigit() or int(batch) < 1 or not path:
        raise argparse.ArgumentTypeError(f"{s!r}: expected BATCH=DIR, e.g. 8=runs/b8")
    return int(batch), Path(path)


# --------------------------------------------------------------------------------------------
# HF reference

def hf_text_lm(arch: str, device: str, dtype: str, seed: int) -> Any:
    """The HF decoder as a causal LM, configured as verify_vs_hf.py's `build_hf_decoder`, random
    weights, parameters cast to `dtype` (RoPE buffers stay fp32, as with from_pretrained). A
    dense preset name (llama3_1_8b, qwen2_5_7b, ...) builds transformers' own model of it, and
    hf:PATH transformers' model of the config.json at PATH (dense_hf.build_random)."""
    sys.path.insert(0, str(SCRIPT_DIR))
    import dense_hf

    if arch.startswith("hf:"):
        return dense_hf.build_random(arch[3:], device, dtype, seed)
    if arch in dense_hf.presets("dense_decoder"):
        return dense_hf.build(dense_hf.config_dict(arch), device, dtype, seed)
    import torch
    from torch import nn
    from transformers import DeepseekOcr2TextConfig, GenerationMixin
    from transformers.modeling_outputs import CausalLMOutputWithPast
    from transformers.models.deepseek_ocr2.modeling_deepseek_ocr2 import (
        DeepseekOcr2TextModel,
        DeepseekOcr2TextPreTrainedModel,
    )

    sys.path.insert(0, str(SCRIPT_DIR))
    from verify_vs_hf import REAL_DEC, TINY_DEC, hf_text_config, params_to

    class TextLM(DeepseekOcr2TextPreTrainedModel, GenerationMixin):
        """DeepseekOcr2TextModel + a bias-free lm_head, with LlamaForCausalLM's forward."""

        def __init__(self, config: DeepseekOcr2TextConfig) -> None:
            super().__init__(config)
            self.model = DeepseekOcr2TextModel(config)
            self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
            self.post_init()

        @classmethod
        def _can_set_experts_implementation(cls) -> bool:
            # transformers decides by looking for "@use_experts_implementation" in the source of
            # the class's module: this file would fall back to "eager", while the library's own
            # DeepseekOcr2 classes (same experts module) get the default, "grouped_mm".
            return True

        def forward(
            self,
            input_ids: torch.LongTensor | None = None,
            attention_mask: torch.Tensor | None = None,
            position_ids: torch.LongTensor | None = None,
            past_key_values: Any = None,
            inputs_embeds: torch.FloatTensor | None = None,
            use_cache: bool | None = None,
            logits_to_keep: int | torch.Tensor = 0,
            **kwargs: Any,
        ) -> CausalLMOutputWithPast:
            out = self.model(
                input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                past_key_values=past_key_values, inputs_embeds=inputs_embeds, use_cache=use_cache,
                **kwargs,
            )
            keep = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
            logits = self.lm_head(out.last_hidden_state[:, keep, :])
            return CausalLMOutputWithPast(logits=logits, past_key_values=out.past_key_values)

    cfg = hf_text_config(TINY_DEC if arch == "tiny" else REAL_DEC, None)
    torch.manual_seed(seed)
    with torch.device(device):
        model = TextLM(cfg)
    params_to(model, torch.bfloat16 if dtype == "bf16" else torch.float32)
    return model.eval()


def experts_impl(model: Any) -> str:
    return str(getattr(model.config, "_experts_implementation", None))


def bench_hf(model: Any, batches: list[int], prompt_len: int, new_tokens: int, repeats: int,
             seed: int) -> list[HfResult]:
    import torch

    device = next(model.parameters()).device
    cuda = device.type == "cuda"
    eos = model.config.eos_token_id
    pad = eos[0] if isinstance(eos, list) else eos  # Gemma 3 lists two
    vocab = min(100000, model.config.vocab_size)  # Mistral's and Phi-3's 32k vocabularies

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    def generate(ids: torch.Tensor, mask: torch.Tensor, n: int) -> float:
        sync()
        t0 = time.perf_counter()
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                             do_sample=False, pad_token_id=pad, eos_token_id=eos)
        sync()
        ms = (time.perf_counter() - t0) * 1e3
        if out.shape != (ids.shape[0], ids.shape[1] + n):
            raise SystemExit(f"HF generate returned {tuple(out.shape)}, expected {ids.shape[0]}x{ids.shape[1] + n}")
        return ms

    results = []
    with torch.inference_mode():
        for b in batches:
            g = torch.Generator().manual_seed(seed)
            ids = torch.randint(3, vocab, (b, prompt_len), generator=g).to(device)
            mask = torch.ones_like(ids)
            try:
                generate(ids, mask, 2)
            except RuntimeError as e:
                # Safety net, as in verify_vs_hf.py: should torch's grouped_mm refuse this
                # dtype/device, use HF's eager expert loop (recorded in the output).
                if experts_impl(model) == "eager":
                    raise
                log(f"experts implementation {experts_impl(model)} failed ({e}); using eager")
                model.set_experts_implementation("eager")
                generate(ids, mask, 2)
            prefill = [generate(ids, mask, 1) for _ in range(repeats)]
            if cuda:
                torch.cuda.reset_peak_memory_stats(device)
            full = [generate(ids, mask, new_tokens) for _ in range(repeats)]
            peak = torch.cuda.max_memory_allocated(device) / 2**30 if cuda and b == 1 else None
            p, f = statistics.median(prefill), statistics.median(full)
            step = (f - p) / (new_tokens - 1)
            results.append(HfResult(batch=b, prefill_ms=p, full_ms=f, step_ms=step,
                                    tokens_per_s=b * 1000.0 / step, peak_allocated_gib=peak,
                                    prefill_runs_ms=prefill, full_runs_ms=full))
            log(f"HF batch {b}: prefill {p:.2f} ms, full {f:.2f} ms, {step:.3f} ms/step")
    return results


# --------------------------------------------------------------------------------------------
# Inputs of the table rows (scripts/bench_rows.py)

def read_hf_vision(path: Path | None) -> dict[int, float | None]:
    """Per batch, HF's DeepSeek-OCR vision ms/page from scripts/bench_vision_hf.py's JSON (None where
    it ran out of memory)."""
    if path is None:
        return {}
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SystemExit(f"{path}: cannot read the HF vision reference ({e})") from e
    out: dict[int, float | None] = {}
    for row in doc.get("rows", []):
        out[int(row["batch"])] = row.get("deepseek_ocr_vision_ms_per_page")
    return out


def read_ngram_json(path: Path) -> dict[str, Any]:
    """llmprof-worker bench-ngram's ngram.json, with the fields the n-gram rows read."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SystemExit(f"{path}: cannot read the n-gram benchmark ({e}; scripts/bench_ngram.sh writes it)") from e
    for key in ("batch", "max_new_tokens", "rule", "tpot_ms.none, rule's stream.p50",
                "tpot_ms.rule, rule's stream.p50", "rule_vs_none_pct_equal_stream", "rule_vs_none_pct_free"):
        cur = doc
        for part in key.split("."):
            if not isinstance(cur, dict) or part not in cur:
                raise SystemExit(f"{path}: no '{key}' (is it bench-ngram's ngram.json?)")
            cur = cur[part]
    return doc


def distinct(values: list[Any]) -> str:
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return "; ".join(MISSING if v is None else str(v) for v in seen)


# --------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llmprof-run", type=parse_run_arg, action="append", required=True, metavar="BATCH=DIR",
                    help="an llmprof stage1 run directory (metrics.json) at this batch size; repeatable")
    ap.add_argument("--llmprof-default-run", type=parse_run_arg, action="append", default=[],
                    metavar="BATCH=DIR",
                    help="a stage1 run with the model's default n-gram rule (the default-config decode row); "
                         "repeatable")
    ap.add_argument("--llmprof-long-run", type=parse_run_arg, action="append", default=[], metavar="BATCH=DIR",
                    help="a stage1 run over long pages (e.g. 1,000 tokens) without the n-gram rule; repeatable")
    ap.add_argument("--llmprof-long-default-run", type=parse_run_arg, action="append", default=[],
                    metavar="BATCH=DIR", help="the same long pages with the model's default n-gram rule; repeatable")
    ap.add_argument("--llmprof-ngram-json", type=Path, action="append", default=[], metavar="PATH",
                    help="llmprof-worker bench-ngram's ngram.json: the n-gram rule over one token stream; repeatable")
    ap.add_argument("--llmprof-distinct-run", type=parse_run_arg, action="append", default=[],
                    metavar="BATCH=DIR", help="stage-1 run of the batch over as many distinct pages")
    ap.add_argument("--hf-vision-json", type=Path, default=None,
                    help="scripts/bench_vision_hf.py --out-json output: HF's vision figure per batch size")
    ap.add_argument("--new-tokens", type=int, default=128, help="HF tokens generated per timed run (>= 2)")
    ap.add_argument("--prompt-len", type=int, default=None,
                    help="HF prompt tokens (default: requests[0].prompt_tokens of the first llmprof run)")
    ap.add_argument("--arch", choices=["full", "tiny", "qwen2_5_0_5b", "qwen2_5_7b", "llama3_1_8b"], default="full",
                    help="HF decoder dimensions: DeepSeek-OCR's, or verify_vs_hf.py's TINY_DEC, or a dense preset")
    ap.add_argument("--hf-config", type=Path, default=None,
                    help="instead of --arch: transformers' model of this config.json (the file llmprof's "
                         "model=hf model.config= ran), random weights")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--seed", type=int, default=0, help="HF weights and input ids")
    ap.add_argument("--repeats", type=int, default=3, help="timed HF generate calls per median")
    ap.add_argument("--skip-hf", action="store_true", help="no HF reference: its columns print " + MISSING)
    ap.add_argument("--out-md", type=Path, default=None, help="write the table and its notes here")
    ap.add_argument("--out-json", type=Path, default=None, help="write every raw number here")
    a = ap.parse_args(argv)
    if a.new_tokens < 2:
        ap.error("--new-tokens must be >= 2 (the decode step is (full - prefill) / (new tokens - 1))")
    if a.repeats < 1:
        ap.error("--repeats must be >= 1")
    if a.hf_config is not None:
        if not a.hf_config.is_file():
            ap.error(f"--hf-config {a.hf_config}: no such file")
        a.arch = f"hf:{a.hf_config}"
    batches = [b for b, _ in a.llmprof_run]
    if len(set(batches)) != len(batches):
        ap.error(f"a batch size is given twice: {batches}")

    by_batch = {b: read_run(b, d) for b, d in a.llmprof_run}
    runs = [by_batch[b] for b in sorted(by_batch)]
    prompt_len = a.prompt_len if a.prompt_len is not None else by_batch[batches[0]].prompt_tokens
    if prompt_len < 1:
        ap.error("--prompt-len must be >= 1")
    for r in [] if a.skip_hf else runs:
        if r.dtype != a.dtype:
            log(f"warning: llmprof batch {r.batch} ran in {r.dtype}, the HF reference in {a.dtype}")
        if a.arch in ("full", "tiny") and ("tiny" in r.model) != (a.arch == "tiny"):
            log(f"warning: llmprof batch {r.batch} ran model {r.model}, the HF reference is --arch {a.arch}")

    hf: dict[int, HfResult] = {}
    hf_experts = hf_device = transformers_version = torch_version = None
    if not a.skip_hf:
        import torch
        import transformers

        if a.device == "cuda" and not torch.cuda.is_available():
            raise SystemExit("--device cuda but torch sees no GPU (use --device cpu or --skip-hf)")
        t0 = time.time()
        model = hf_text_lm(a.arch, a.device, a.dtype, a.seed)
        log(f"HF decoder ({a.arch}, {a.dtype}, {model.config._attn_implementation} attention, "
            f"{experts_impl(model)} experts) built on {a.device} in {time.time() - t0:.1f}s")
        hf = {h.batch: h for h in bench_hf(model, [r.batch for r in runs], prompt_len, a.new_tokens,
                                            a.repeats, a.seed)}
        hf_experts = experts_impl(model)
        hf_device = torch.cuda.get_device_name() if a.device == "cuda" else "cpu"
        transformers_version, torch_version = transformers.__version__, torch.__version__

    fl = {r.batch: floors(r) for r in runs}
    rows = table_rows(runs, fl, hf)
    defaults = [read_run(b, d) for b, d in a.llmprof_default_run]
    default_rows, default_notes = default_rule_rows(defaults, by_batch)
    rows += default_rows
    hf_vision = read_hf_vision(a.hf_vision_json)
    long_off = [read_run(b, d) for b, d in a.llmprof_long_run]
    long_on = [read_run(b, d) for b, d in a.llmprof_long_default_run]
    more_rows, long_notes = long_rows(long_off, long_on)
    ngram_benches = [read_ngram_json(p) for p in a.llmprof_ngram_json]
    stream_rows, stream_notes = ngram_rows(ngram_benches)
    more_rows += stream_rows
    long_notes += stream_notes
    distinct_runs = [read_run(b, d) for b, d in a.llmprof_distinct_run]
    spread_rows, distinct_notes = distinct_rows(distinct_runs, by_batch)
    rows = vision_rows(runs, hf_vision) + rows + spread_rows + more_rows + kineto_rows(runs)
    default_notes += distinct_notes + long_notes
    env = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": distinct([r.gpu for r in runs]),
        "llmprof_version": distinct([r.version for r in runs]),
        "llmprof_prompt_tokens": {r.batch: r.prompt_tokens for r in runs},
        "llmprof_max_new_tokens": {r.batch: r.max_new_tokens for r in runs},
        "prompt_len": prompt_len,
        "new_tokens": a.new_tokens,
        "arch": a.arch,
        "dtype": a.dtype,
        "seed": a.seed,
        "repeats": a.repeats,
        "hf_skipped": a.skip_hf,
        "hf_device": hf_device,
        "hf_attn_implementation": None if a.skip_hf else "sdpa",
        "hf_experts_implementation": hf_experts,
        "transformers": transformers_version,
        "torch": torch_version,
    }
    switches = distinct([json.dumps(r.switches, sort_keys=True) for r in runs])
    hf_line = "skipped" if a.skip_hf else (
        f"transformers {env['transformers']}, torch {env['torch']}, sdpa attention, {hf_experts} experts, "
        f"random weights, median of {a.repeats} generate() calls on {hf_device}")
    md = render_table(rows) + [
        "",
        f"- date: {env['date_utc']}; GPU: {env['gpu']}; llmprof {env['llmprof_version']}",
        f"- HF prompt {prompt_len} random tokens (llmprof prompt tokens by batch, image tokens included: "
        f"{', '.join(f'{b}: {n}' for b, n in env['llmprof_prompt_tokens'].items())}), "
        f"HF new tokens {a.new_tokens} (llmprof max_new_tokens by batch: "
        f"{', '.join(f'{b}: {n}' for b, n in env['llmprof_max_new_tokens'].items())}), "
        f"dtype {a.dtype}, arch {a.arch}",
        f"- HF reference: {hf_line}",
        f"- llmprof switches (runtime.optim; model.optim as model.*): {switches}",
        "- ratio: how many times better llmprof is (HF/llmprof for times and memory, llmprof/HF for tok/s)",
        "- floors are metrics.json's utilisation.floor_ms: decode = the larger of analytic bytes per step ÷ peak DRAM "
        "bandwidth and FLOPs ÷ peak; prefill = analytic FLOPs ÷ peak tensor TFLOP/s; the HF prefill is the text decoder only, "
        "llmprof's includes the vision encoder; the tok/s floor column is the ceiling batch × 1000 ÷ decode floor; "
        "vision floor = floor_ms.vision per page (analytic vision FLOPs ÷ peak TFLOP/s); HF vision = transformers' DeepseekOcr2 SAM "
        "encoder + a CLIP-L vision tower of DeepSeek-OCR's size on the same views (scripts/bench_vision_hf.py)",
        "- decoder-only prefill = llmprof prefill p50 − vision p50 (an approximation: the p50 of a "
        "difference is not the difference of p50s); llmprof's peak memory includes the vision encoder",
    ] + default_notes
    text = "\n".join(md) + "\n"
    print(text, end="")
    if a.out_md:
        a.out_md.parent.mkdir(parents=True, exist_ok=True)
        a.out_md.write_text(text)
    if a.out_json:
        a.out_json.parent.mkdir(parents=True, exist_ok=True)
        a.out_json.write_text(json.dumps({
            "llmprof": [dataclasses.asdict(r) for r in runs],
            "llmprof_default_ngram": [dataclasses.asdict(r) for r in defaults],
            "llmprof_long": [dataclasses.asdict(r) for r in long_off],
            "llmprof_long_default_ngram": [dataclasses.asdict(r) for r in long_on],
            "llmprof_distinct": [dataclasses.asdict(r) for r in distinct_runs],
            "llmprof_ngram_one_stream": ngram_benches,
            "hf_vision_ms_per_page": hf_vision,
            "hf": [dataclasses.asdict(h) for h in hf.values()],
            "floors": {b: dataclasses.asdict(f) for b, f in fl.items()},
            "table": [dataclasses.asdict(r) for r in rows],
            "env": env,
        }, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
