#!/usr/bin/env python3
"""Run Meta's HolisticTraceAnalysis (HTA) on a folder of Kineto traces and dump its breakdowns as JSON.

For side-by-side comparison of `llmprof analyze trace` (docs/analyze-trace.md) with HTA's
temporal / idle-time / kernel breakdowns; how HTA defines them and how they differ from llmprof's:
docs/analyze-trace.md.

Install HTA once (not a dependency of llmprof):
    python3 -m venv /work/hta-venv && /work/hta-venv/bin/pip install HolisticTraceAnalysis
Run:
    /work/hta-venv/bin/python scripts/hta_breakdowns.py TRACE_DIR [--out FILE.json]

HTA quirks handled here: ranks come from `distributedInfo.rank` (HTA greps `"rank": N`, else
assumes rank 0 for every file), so we pass an explicit {rank: file} map (file order when no rank);
HTA's plots are disabled. Kept as HTA does them (flags below change two): float (ns-precision)
timestamps are rounded inwards to whole us (ceil(ts), floor(ts+dur)); with >=2 ProfilerStep#N the
last step and every GPU event not launched by a kept CPU event are dropped. The temporal breakdown
has no memory column: memcpy/memset time is inside non_compute; per-type (incl. MEMORY) union
time is in kernel_type_breakdown_all_ranks.
"""
import argparse, gzip, json, math, os, re, sys


def find_traces(trace_dir):
    files = sorted(f for f in os.listdir(trace_dir) if f.endswith((".json", ".gz")))
    rank_re, out = re.compile(rb'"rank"\s*:\s*(\d+)'), {}
    for i, f in enumerate(files):
        path = os.path.join(trace_dir, f)
        with (gzip.open if f.endswith(".gz") else open)(path, "rb") as fh:
            m = rank_re.search(fh.read(1 << 20))  # metadata precedes traceEvents
        rank = int(m.group(1)) if m else i
        if rank in out:
            rank = max(out) + 1
        out[rank] = path
    return out


def records(df):
    """DataFrame -> list of plain dicts (numpy scalars -> python, NaN -> None)."""
    def conv(v):
        v = v.item() if hasattr(v, "item") else v
        return None if isinstance(v, float) and math.isnan(v) else v
    return [{str(k): conv(v) for k, v in row.items()} for row in df.reset_index(drop=True).to_dict("records")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace_dir")
    ap.add_argument("--out", help="write JSON here (default: stdout only)")
    ap.add_argument("--include-last-step", action="store_true", help="keep the last ProfilerStep (HTA drops it)")
    ap.add_argument("--no-ns-rounding", action="store_true", help="set HTA_DISABLE_NS_ROUNDING=1 (keep fractional us)")
    ap.add_argument("--kernel-delay", type=int, default=30, help="consecutive_kernel_delay for idle breakdown (trace time unit, us)")
    a = ap.parse_args()
    if a.no_ns_rounding:
        os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    from hta.trace_analysis import TraceAnalysis  # imported late: slow, and env must be set first
    from importlib.metadata import version

    files = find_traces(a.trace_dir)
    if not files:
        sys.exit(f"no .json/.json.gz traces in {a.trace_dir}")
    ta = TraceAnalysis(trace_files=files, trace_dir=a.trace_dir, include_last_profiler_step=a.include_last_step)
    ranks = sorted(ta.t.traces)
    res = {"hta_version": version("HolisticTraceAnalysis"), "trace_files": {str(r): p for r, p in files.items()},
           "profiler_steps": [int(s) for s in ta.t.get_iterations()],
           "options": {"include_last_profiler_step": a.include_last_step,
                       "ns_rounding": not a.no_ns_rounding, "consecutive_kernel_delay": a.kernel_delay}}

    # Temporal breakdown: union of all GPU intervals over [first start, last end]; compute = union of compute kernels.
    res["temporal_breakdown"] = records(ta.get_temporal_breakdown(visualize=False))

    # Idle time breakdown: gaps between consecutive events on each stream, classified host/kernel wait/other.
    idle, stats = ta.get_idle_time_breakdown(ranks=ranks, visualize=False, show_idle_interval_stats=True,
                                             consecutive_kernel_delay=a.kernel_delay)
    totals = idle.groupby(["rank", "idle_category"])["idle_time"].sum().reset_index()
    res["idle_time_breakdown"] = {"per_stream": records(idle), "per_rank_totals": records(totals),
                                  "interval_stats": records(stats.reset_index()) if stats is not None else None}

    # Kernel breakdown with no "others" folding (num_kernels huge => HTA's aggregation branch is skipped).
    type_df, kern_df = ta.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0, num_kernels=1 << 62,
                                                   include_memory_kernels=True)
    counts = {}
    for r in ranks:  # HTA returns no count; take it from HTA's own (filtered, rounded) trace frame
        df = ta.t.get_trace(r)
        g = df[df["stream"].ne(-1)].groupby("name").size()
        sym = ta.t.symbol_table.get_sym_table()
        counts.update({(r, sym[n]): int(c) for n, c in g.items()})
    kernels = records(kern_df)
    for k in kernels:
        k["count"] = counts.get((k["rank"], k["name"]))
    res["kernel_type_breakdown_all_ranks"] = records(type_df)
    res["kernel_breakdown"] = kernels

    try:
        res["comm_comp_overlap"] = records(ta.get_comm_comp_overlap(visualize=False))
    except Exception as e:  # e.g. no communication kernels
        res["comm_comp_overlap"] = f"error: {e!r}"

    text = json.dumps(res, indent=2, default=str)
    print(text)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
