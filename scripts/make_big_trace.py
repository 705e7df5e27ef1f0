#!/usr/bin/env python3
"""Write a large Kineto trace for benchmarking `llmprof analyze trace` (docs/analyze-trace.md).

    python3 scripts/make_big_trace.py OUT.json [--gb 2] [--source tests/fixtures/kineto/hf_eager.trace.json.gz]

Repeats a real trace's events (by default the transformers eager fixture: ops with shapes,
runtime calls, kernels, flows, ProfilerStep ranges) until the file reaches the size asked for,
each copy shifted in time past the previous one, with its ids (External id, correlation, flow
ids) and ProfilerStep numbers offset so that every copy links and nests as the original does.
Deterministic: the same arguments write the same bytes.
"""
import argparse
import gzip
import json

ID_KEYS = ("External id", "correlation", "Record function id", "Ev Idx")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--gb", type=float, default=2.0)
    ap.add_argument("--source", default="tests/fixtures/kineto/hf_eager.trace.json.gz")
    args = ap.parse_args()
    opener = gzip.open if args.source.endswith(".gz") else open
    with opener(args.source, "rt") as f:
        root = json.load(f)
    events = root.pop("traceEvents")
    timed = [e for e in events if "ts" in e]
    t0 = min(float(e["ts"]) for e in timed)
    span = max(float(e["ts"]) + float(e.get("dur", 0)) for e in timed) - t0 + 1000.0
    max_id = 0
    for e in events:
        for k in ID_KEYS:
            v = e.get("args", {}).get(k)
            if isinstance(v, int):
                max_id = max(max_id, v)
        if isinstance(e.get("id"), int):
            max_id = max(max_id, e["id"])
    steps = sum(1 for e in events if str(e.get("name", "")).startswith("ProfilerStep#"))
    target = int(args.gb * (1 << 30))
    header = json.dumps(root)[:-1]
    written = 0
    with open(args.out, "w") as out:
        out.write(header + ', "traceEvents": [\n')
        copy = 0
        first = True
        while written < target:
            dt, did = copy * span, copy * (max_id + 1)
            chunk = []
            for e in events:
                e = dict(e)
                if "ts" in e:
                    e["ts"] = round(float(e["ts"]) + dt, 3)
                if isinstance(e.get("id"), int):
                    e["id"] += did
                a = e.get("args")
                if a:
                    a = dict(a)
                    for k in ID_KEYS:
                        if isinstance(a.get(k), int) and a[k] > 0:
                            a[k] += did
                    e["args"] = a
                name = e.get("name")
                if isinstance(name, str) and name.startswith("ProfilerStep#"):
                    e["name"] = "ProfilerStep#%d" % (int(name[13:]) + copy * steps)
                chunk.append(json.dumps(e, separators=(", ", ": ")))
            text = ("" if first else ",\n") + ",\n".join(chunk)
            first = False
            out.write(text)
            written += len(text)
            copy += 1
        out.write("\n]}\n")
    print(f"{args.out}: {written / 1e9:.2f} GB, {copy} copies of {len(events)} events")


if __name__ == "__main__":
    main()
