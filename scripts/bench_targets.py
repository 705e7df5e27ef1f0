"""#44's table from scripts/bench_targets.sh's benches: for each row of the issue, llmprof, HF
transformers, the floor, llmprof's fraction of it, the target and whether it is met. Every number
comes from a bench's table.json (scripts/bench_vs_hf.py, which takes the floors from llmprof's own
metrics.json); the targets are the issue's, written here once.

    python3 scripts/bench_targets.py OUT_DIR   (OUT_DIR/<model>/table.json for each bench)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

# (model folder, table.json metric, label, target kind, target value)
#   "fraction": llmprof's fraction of the floor (or of the tok/s ceiling) at least the value;
#   "max_ms": llmprof's figure at most the value.
DENSE = [
    ("decode ms/step, batch 1", "decode ms/step, batch 1", "fraction", 0.85),
    ("decode tok/s, batch 32", "decode tok/s, batch 32", "fraction", 0.85),
    ("decode tok/s, batch 128", "decode tok/s, batch 128", "fraction", 0.85),
    ("prefill ms, batch 1 (llmprof incl. vision)", "prefill ms, batch 1 (1,024 tokens)", "fraction", 0.75),
    ("prefill ms, batch 8 (llmprof incl. vision)", "prefill ms, batch 8 (1,024 tokens)", "fraction", 0.75),
]
OCR = [
    ("decode ms/step, batch 1", "decode ms/step, batch 1", "max_ms", 0.6),
    ("decode tok/s, batch 32", "decode tok/s, batch 32", "fraction", 0.89),
    ("prefill ms, batch 32 (llmprof incl. vision)", "prefill ms incl. vision, batch 32", "max_ms", 250.0),
]
NAMES = {"llama3_1_8b": "Llama-3.1-8B", "qwen2_5_7b": "Qwen2.5-7B", "deepseek_ocr": "DeepSeek-OCR"}


def fmt(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:,.{digits}f}"


def rows_of(model: str, table: list[dict]) -> list[str]:
    by_metric = {r["metric"]: r for r in table}
    out = []
    for metric, label, kind, target in (OCR if model == "deepseek_ocr" else DENSE):
        r = by_metric.get(metric)
        if r is None:
            out.append(f"| {NAMES.get(model, model)} {label} | — | — | — | — | — | not measured |")
            continue
        frac = r.get("fraction")
        if kind == "fraction":
            want = f"≥ {target:.0%} of floor"
            met = None if frac is None else frac >= target
        else:
            want = f"≤ {fmt(target)} ms"
            met = None if r["llmprof"] is None else r["llmprof"] <= target
        frac_s = "—" if frac is None else f"{frac:.1%}"
        verdict = {True: "met", False: "not met", None: "—"}[met]
        out.append(f"| {NAMES.get(model, model)} {label} | {fmt(r['llmprof'])} | {fmt(r['hf'])} | "
                   f"{fmt(r['floor'])} | {frac_s} | {want} | {verdict} |")
    return out


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(sys.argv[1])
    benches = sorted(p.parent for p in root.glob("*/table.json"))
    if not benches:
        print(f"bench_targets: no */table.json under {root}", file=sys.stderr)
        return 2
    lines = ["| metric | llmprof | transformers | floor | fraction of floor | target | |",
             "|---|---:|---:|---:|---:|---|---|"]
    gpus, versions = set(), set()
    for b in benches:
        doc = json.loads((b / "table.json").read_text())
        lines += rows_of(b.name, doc["table"])
        env = doc.get("env", {})
        gpus.add(str(env.get("gpu")))
        v = env.get("llmprof_version") or []
        versions.update([v] if isinstance(v, str) else map(str, v))
    lines += ["", f"- GPU: {', '.join(sorted(gpus))}; llmprof {', '.join(sorted(versions))}",
              "- floors from llmprof's metrics.json (decode: bytes ÷ peak DRAM bandwidth or FLOPs ÷ peak, "
              "the larger; prefill: FLOPs ÷ dense bf16 peak); targets: issue #44 (H100; this run's GPU above)"]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
