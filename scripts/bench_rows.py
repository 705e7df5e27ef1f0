"""The rows of scripts/bench_vs_hf.py's table (#14): what each row computes from llmprof's runs,
the HF reference and the floors, and how the table is rendered, with the records they are derived
from (one llmprof run, one HF result). bench_vs_hf.py reads the runs and times HF; this module only
holds, derives and formats.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

MISSING = "—"


@dataclasses.dataclass
class LlmprofRun:
    batch: int
    dir: str
    model: str
    dtype: str
    gpu: str | None
    version: str
    prompt_tokens: int
    max_new_tokens: int
    prefill_ms: float
    vision_ms: float | None
    step_ms: float
    peak_allocated_gib: float | None
    switches: dict[str, Any]
    tpot_ms: float | None = None  # serving.tpot_ms.p50_ms: the step plus the token selection
    e2e_ms: float | None = None  # serving.e2e_ms.p50_ms: request start -> last token
    kineto_overhead_pct: float | None = None  # kineto.overhead_pct, when the profiler ran
    # utilisation.floor_ms: the floors metrics.json computes at its peaks (stage -> ms)
    floor_ms: dict[str, float] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class HfResult:
    batch: int
    prefill_ms: float
    full_ms: float
    step_ms: float
    tokens_per_s: float
    peak_allocated_gib: float | None
    prefill_runs_ms: list[float]
    full_runs_ms: list[float]


@dataclasses.dataclass
class Row:
    metric: str
    kind: str  # "ms", "tok_s", "gib", "rate", "x" or "pct": how the value columns are formatted
    llmprof: float | None
    hf: float | None
    ratio: float | None
    floor: float | None
    fraction: float | None


def div(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def sub(a: float | None, b: float | None) -> float | None:
    return a - b if a is not None and b is not None else None


@dataclasses.dataclass
class Floors:
    prefill_ms: float | None  # metrics.json utilisation.floor_ms.prefill: FLOPs ÷ peak FLOP/s
    decode_step_ms: float | None  # utilisation.floor_ms.decode_step: the roofline's floor (bytes ÷ bandwidth
    # or FLOPs ÷ peak, the larger)
    decode_tok_s_ceiling: float | None  # batch × 1000 ÷ decode_step_ms


def floors(r: LlmprofRun) -> Floors:
    """The floors metrics.json computed (report/stage1/work.rs), never derived again here."""
    step = r.floor_ms.get("decode_step")
    return Floors(r.floor_ms.get("prefill"), step, div(r.batch * 1000.0, step))


def table_rows(runs: list[LlmprofRun], fl: dict[int, Floors], hf: dict[int, HfResult]) -> list[Row]:
    rows = []
    for r in runs:
        b, f, h = r.batch, fl[r.batch], hf.get(r.batch)
        hf_prefill = h.prefill_ms if h else None
        hf_step = h.step_ms if h else None
        hf_tok_s = h.tokens_per_s if h else None
        decoder_ms = sub(r.prefill_ms, r.vision_ms)
        tok_s = b * 1000.0 / r.step_ms
        rows += [
            Row(f"prefill ms, batch {b} (llmprof incl. vision)", "ms", r.prefill_ms, hf_prefill,
                div(hf_prefill, r.prefill_ms), f.prefill_ms, div(f.prefill_ms, r.prefill_ms)),
            Row(f"prefill ms, batch {b}, decoder only", "ms", decoder_ms, hf_prefill,
                div(hf_prefill, decoder_ms), None, None),
            Row(f"decode ms/step, batch {b}", "ms", r.step_ms, hf_step, div(hf_step, r.step_ms),
                f.decode_step_ms, div(f.decode_step_ms, r.step_ms)),
            Row(f"decode tok/s, batch {b}", "tok_s", tok_s, hf_tok_s, div(tok_s, hf_tok_s),
                f.decode_tok_s_ceiling, div(tok_s, f.decode_tok_s_ceiling)),
        ]
    one = next((r for r in runs if r.batch == 1), None)
    if one is not None:
        hf_peak = hf[1].peak_allocated_gib if 1 in hf else None
        rows.append(Row("peak GPU memory GiB, batch 1", "gib", one.peak_allocated_gib, hf_peak,
                        div(hf_peak, one.peak_allocated_gib), None, None))
    return rows


def default_rule_rows(defaults: list[LlmprofRun], by_batch: dict[int, LlmprofRun]) -> tuple[list[Row], list[str]]:
    """The default-config decode rows: TPOT with the model's default n-gram rule, its floor, and a
    note comparing it with the rule-free run of the same batch size."""
    rows, notes = [], []
    for d in defaults:
        off = by_batch.get(d.batch)
        f = floors(d)
        rows.append(Row(f"decode ms/token (TPOT), batch {d.batch}, default n-gram rule", "ms", d.tpot_ms, None,
                        None, f.decode_step_ms, div(f.decode_step_ms, d.tpot_ms)))
        if off is not None and off.tpot_ms is not None and d.tpot_ms is not None:
            notes.append(f"- default n-gram rule vs none at batch {d.batch}: TPOT {d.tpot_ms:.3f} vs "
                         f"{off.tpot_ms:.3f} ms ({(d.tpot_ms / off.tpot_ms - 1) * 100:+.1f} %); HF's "
                         "`no_repeat_ngram_size` is a whole-sequence rule with other semantics, so the HF "
                         "column stays empty")
    return rows, notes


def distinct_rows(distinct: list[LlmprofRun], by_batch: dict[int, LlmprofRun]) -> tuple[list[Row], list[str]]:
    """Decode over distinct pages: every row its own token stream, hence its own experts, where the
    main rows' batch repeats one page and every row routes to the same experts. The floor (uniform
    routing) is the same; a note compares the step with the copies' run of the same batch size."""
    rows, notes = [], []
    for d in distinct:
        f = floors(d)
        tok_s = d.batch * 1000.0 / d.step_ms
        rows.append(Row(f"decode tok/s, batch {d.batch}, {d.batch} distinct pages", "tok_s", tok_s, None, None,
                        f.decode_tok_s_ceiling, div(tok_s, f.decode_tok_s_ceiling)))
        same = by_batch.get(d.batch)
        if same is not None:
            notes.append(f"- {d.batch} distinct pages vs {d.batch} copies of one page at batch {d.batch}: decode step "
                         f"{d.step_ms:.3f} vs {same.step_ms:.3f} ms ({(d.step_ms / same.step_ms - 1) * 100:+.1f} %); "
                         "copies route every row to the same experts, distinct pages spread the routing as "
                         "the floor assumes")
    return rows, notes


def vision_rows(runs: list[LlmprofRun], hf_vision: dict[int, float | None]) -> list[Row]:
    """Vision per page (SAM + CLIP + projector) at each batch size: llmprof's vision region ÷ pages,
    HF's SAM encoder + CLIP-L on the same views, floor = metrics.json's vision floor ÷ pages."""
    rows = []
    for r in runs:
        if r.vision_ms is None:
            continue
        per_page = r.vision_ms / r.batch
        hf = hf_vision.get(r.batch)
        vision_floor = r.floor_ms.get("vision")
        floor = vision_floor / r.batch if vision_floor is not None else None
        rows.append(Row(f"vision ms/page, batch {r.batch} (SAM + CLIP + projector)", "ms", per_page, hf,
                        div(hf, per_page), floor, div(floor, per_page)))
    return rows


def long_rows(off: list[LlmprofRun], on: list[LlmprofRun]) -> tuple[list[Row], list[str]]:
    """Long pages: pages/s end to end (the default-rule run when given: the default config) and
    TPOT without and with the default n-gram rule."""
    rows, notes = [], []
    off_by = {r.batch: r for r in off}
    for r in on or off:
        n = r.max_new_tokens
        which = "default n-gram rule" if on else "no n-gram rule"
        rows.append(Row(f"pages/s, batch {r.batch}, {n:,}-token pages (e2e incl. vision, {which})", "rate",
                        div(r.batch * 1000.0, r.e2e_ms), None, None, None, None))
    for group, which in ((off, "no n-gram rule"), (on, "default n-gram rule")):
        for r in group:
            floor = floors(r).decode_step_ms
            rows.append(Row(f"decode ms/token (TPOT), batch {r.batch}, {r.max_new_tokens:,} tokens, {which}",
                            "ms", r.tpot_ms, None, None, floor, div(floor, r.tpot_ms)))
    for r in on:
        base = off_by.get(r.batch)
        if base is not None and base.tpot_ms and r.tpot_ms is not None:
            notes.append(f"- default n-gram rule vs none at batch {r.batch} over {r.max_new_tokens:,} tokens: TPOT "
                         f"{r.tpot_ms:.3f} vs {base.tpot_ms:.3f} ms ({(r.tpot_ms / base.tpot_ms - 1) * 100:+.1f} %); "
                         "with random weights the rule also changes which tokens, hence which experts, each step "
                         "reads (docs/performance.md)")
    return rows, notes


def ngram_rows(benches: list[dict[str, Any]]) -> tuple[list[Row], list[str]]:
    """The n-gram rule over one token stream (`llmprof-worker bench-ngram`'s ngram.json): TPOT
    without and with the rule while both replay the stream the rule produced, and their
    difference; the free runs' difference goes to the notes."""
    rows, notes = [], []
    for j in benches:
        b, n, tpot = j["batch"], j["max_new_tokens"], j["tpot_ms"]
        none, rule = tpot["none, rule's stream"]["p50"], tpot["rule, rule's stream"]["p50"]
        name = rule_name(j["rule"])
        for which, v in (("no n-gram rule", none), (name, rule)):
            rows.append(Row(f"decode ms/step, batch {b}, {n:,} tokens, one token stream, {which}", "ms",
                            v, None, None, None, None))
        rows.append(Row(f"{name} vs none, batch {b}, {n:,} tokens, one token stream", "pct",
                        j["rule_vs_none_pct_equal_stream"], None, None, None, None))
        notes.append(f"- {name} over one token stream (batch {b}, {n:,} tokens, scripts/bench_ngram.sh): both "
                     f"sides replay the stream the rule produced, so they read the same experts; ms/step = decode "
                     f"time ÷ decode steps (the TPOT rows above are (e2e − TTFT) ÷ (tokens − 1)); {rule:.4f} vs "
                     f"{none:.4f} ms ({j['rule_vs_none_pct_equal_stream']:+.2f} %). Free runs, each its own "
                     f"stream: {j['rule_vs_none_pct_free']:+.2f} %")
    return rows, notes


def rule_name(rule: dict[str, Any]) -> str:
    """The n-gram rule of a bench-ngram run, as the table names it."""
    if rule.get("kind") == "window":
        return f"n-gram rule (n={rule['n']}, window {rule['window']})"
    if rule.get("kind") == "hf":
        return f"n-gram rule (n={rule['n']}, whole sequence)"
    return "n-gram rule"


def kineto_rows(runs: list[LlmprofRun]) -> list[Row]:
    """Profiled ÷ timed pass for every run whose Kineto pass ran (stage 1's kineto.overhead_pct)."""
    return [Row(f"Kineto profiled pass ÷ timed pass, batch {r.batch}", "x", 1 + r.kineto_overhead_pct / 100,
                None, None, None, None)
            for r in runs if r.kineto_overhead_pct is not None]


def fmt_value(x: float | None, kind: str) -> str:
    if x is None:
        return MISSING
    if kind == "x":
        return f"{x:.2f}×"
    if kind == "pct":
        return f"{x:+.1f} %"
    if kind == "rate":
        return f"{x:.2f}"
    if kind == "gib":
        return f"{x:.2f}"
    if kind == "tok_s":
        return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"
    if x >= 100:
        return f"{x:,.1f}"
    return f"{x:.2f}" if x >= 1 else f"{x:.3g}"


def fmt_ratio(x: float | None) -> str:
    if x is None:
        return MISSING
    return f"{x:.1f}×" if x >= 10 else f"{x:.2f}×" if x >= 1 else f"{x:.2g}×"


def fmt_pct(x: float | None) -> str:
    return MISSING if x is None else (f"{x * 100:.1f} %" if x >= 0.01 else f"{x * 100:.2g} %")


def render_table(rows: list[Row]) -> list[str]:
    cells = [["metric", "llmprof", "HF", "ratio", "floor", "fraction of floor"]]
    for r in rows:
        cells.append([r.metric, fmt_value(r.llmprof, r.kind), fmt_value(r.hf, r.kind), fmt_ratio(r.ratio),
                      fmt_value(r.floor, r.kind), fmt_pct(r.fraction)])
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
    just: list[Callable[[str, int], str]] = [str.ljust] + [str.rjust] * (len(widths) - 1)
    line = lambda c: "| " + " | ".join(j(s, w) for j, s, w in zip(just, c, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 1) + ":" if i else ":" + "-" * (w + 1) for i, w in enumerate(widths)) + "|"
    return [line(cells[0]), sep] + [line(c) for c in cells[1:]]
