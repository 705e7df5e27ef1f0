#!/usr/bin/env python3
"""Load one llmprof trace.json with HolisticTraceAnalysis and print, as JSON, what HTA found:
its warnings, the rank and world size, the ProfilerStep iterations, and how many ranges of each
of the given names it sees (llmprof's regions and module scopes are user annotations).

    PYTHON_WITH_HTA scripts/hta_loads.py TRACE.json NAME...

Used by tests/worker/hta.rs (#41 item 5); the breakdowns on a GPU trace are
scripts/hta_breakdowns.py's job.
"""
import json, logging, os, shutil, sys, tempfile, warnings

trace, names = sys.argv[1], sys.argv[2:]
seen = []


class Keep(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.WARNING:
            seen.append(record.getMessage())


logging.getLogger().addHandler(Keep())
logging.getLogger("hta").addHandler(Keep())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from hta.trace_analysis import TraceAnalysis

    # HTA's usual entry: a folder of traces, each file's rank read from its distributedInfo.
    folder = tempfile.mkdtemp(prefix="hta-")
    shutil.copy(trace, os.path.join(folder, "trace.json"))
    ta = TraceAnalysis(trace_dir=folder)
    shutil.rmtree(folder, ignore_errors=True)
seen += [str(w.message) for w in caught]
df = ta.t.get_trace(0)
sym = ta.t.symbol_table.get_sym_table()
counts = {}
for n in names:
    idx = [i for i, s in enumerate(sym) if s == n or s.startswith(n + "[") or s.startswith(n + ".")]
    counts[n] = int(df["name"].isin(idx).sum())
meta = ta.t.meta_data.get(0, {}) if hasattr(ta.t, "meta_data") else {}
dist = meta.get("distributedInfo", {}) if isinstance(meta, dict) else {}
print(json.dumps({
    "warnings": seen,
    "rank": dist.get("rank"),
    "world_size": dist.get("world_size"),
    "iterations": [int(s) for s in ta.t.get_iterations()],
    "ranges": counts,
}))
