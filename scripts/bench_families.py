#!/usr/bin/env python3
"""One table over scripts/bench_families.sh's per-family benches: OUT_DIR/<name>/table.json as
scripts/bench_vs_hf.py writes it (llmprof's runs with their metrics.json floors, transformers'
generate()).

  bench_families.py OUT_DIR NAME[:LAYERS[:FIRST_DENSE]] ...
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def row(out: Path, spec: str) -> str:
    name = spec.split(":")[0]
    layers = spec.split(":")[1] if ":" in spec else "all"
    path = out / name / "table.json"
    if not path.is_file():
        return f"| {name} | {layers} | failed: see {name}.log | | | | | | | |"
    t = json.loads(path.read_text())
    ours = {r["batch"]: r for r in t.get("llmprof", [])}
    hf = {r["batch"]: r for r in t.get("hf", [])}
    floors = t.get("floors", {})

    def cell(x, fmt):
        return fmt.format(x) if isinstance(x, (int, float)) else "—"

    step1 = ours.get(1, {}).get("step_ms")
    floor1 = floors.get("1", {}).get("decode_step_ms")
    step32 = ours.get(32, {}).get("step_ms")
    tok32 = 32 * 1000.0 / step32 if step32 else None
    ceil32 = floors.get("32", {}).get("decode_tok_s_ceiling")
    frac1 = floor1 / step1 if step1 and floor1 else None
    frac32 = tok32 / ceil32 if tok32 and ceil32 else None
    return (f"| {name} | {layers} | {cell(step1, '{:.2f}')} | {cell(hf.get(1, {}).get('step_ms'), '{:.2f}')} "
            f"| {cell(floor1, '{:.2f}')} | {cell(frac1 and 100 * frac1, '{:.0f} %')} "
            f"| {cell(tok32, '{:,.0f}')} | {cell(hf.get(32, {}).get('tokens_per_s'), '{:,.0f}')} "
            f"| {cell(ceil32, '{:,.0f}')} | {cell(frac32 and 100 * frac32, '{:.0f} %')} |")


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    print("| model | layers | decode ms/step b1 | HF | floor | of floor | tok/s b32 | HF | ceiling | of ceiling |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for spec in argv[1:]:
        print(row(out, spec))
    env = next((json.loads((out / s.split(":")[0] / "table.json").read_text()).get("env")
                for s in argv[1:] if (out / s.split(":")[0] / "table.json").is_file()), None)
    if env:
        print(f"\n- {env.get('date_utc')}; {env.get('gpu')}; llmprof {env.get('llmprof_version')}; "
              f"transformers {env.get('transformers')}, torch {env.get('torch')} ({env.get('hf_attn_implementation')} "
              f"attention, {env.get('hf_experts_implementation')} experts); {env.get('prompt_len')} prompt tokens, "
              f"{env.get('new_tokens')} new, {env.get('dtype')}; synthetic weights on both sides")
    print("- floor: metrics.json's decode floor (analytic weight + KV bytes of a step ÷ peak DRAM "
          "bandwidth, or FLOPs ÷ peak if larger); ceiling = 32 × 1000 ÷ the batch-32 floor")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
