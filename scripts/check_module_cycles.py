#!/usr/bin/env python3
"""Fails when the top-level modules of a crate import each other in a loop (docs/architecture.md:
arrows run one way). A module's imports are every `crate::<module>` path in its files (use
statements, paths in code, doc links excluded), so an import the structure drawing cannot see
still counts. Prints each cycle with one file per arrow that makes it."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CRATES = {"src/config": "lib.rs", "src/llmprof": "lib.rs", "src/worker": "lib.rs"}
PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")
# `use crate::{a, b::c};`: each name in the braces (multi-line groups are joined first).
GROUP = re.compile(r"\bcrate::\{([^}]*)\}", re.S)


def code_lines(text: str):
    """The lines of `text` that are code: comments and doc comments dropped."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("//"):
            continue
        yield line.split("//", 1)[0] if "://" not in line else line


def module_of(crate: pathlib.Path, file: pathlib.Path) -> str | None:
    rel = file.relative_to(crate)
    if len(rel.parts) == 1:
        stem = rel.stem
        return None if stem in ("lib", "main", "build") or stem.startswith("build_") else stem
    return rel.parts[0]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def graph_of(crate: pathlib.Path) -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """Top-level module -> the top-level modules its files name, and one file per arrow."""
    graph: dict[str, set[str]] = {}
    witness: dict[tuple[str, str], str] = {}
    for file in sorted(crate.rglob("*.rs")):
        if "target" in file.parts:
            continue
        src = module_of(crate, file)
        if src is None:
            continue
        graph.setdefault(src, set())
        code = "\n".join(code_lines(file.read_text(encoding="utf-8")))
        names = PATH.findall(code)
        for group in GROUP.findall(code):
            names += [n.strip().split("::")[0] for n in group.split(",") if n.strip()]
        for dst in names:
            # `crate::{self, ...}` names no module.
            if dst != src and dst != "self":
                graph[src].add(dst)
                witness.setdefault((src, dst), str(file))
    return graph, witness


def self_test() -> None:
    """The check finds a loop through a grouped import in a test module, and none without it."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        crate = pathlib.Path(d)
        (crate / "a").mkdir()
        (crate / "a" / "mod.rs").write_text("use crate::b::x;\n")
        (crate / "b.rs").write_text("// crate::a in a comment is not an import\n")
        assert cycles(graph_of(crate)[0]) == []
        (crate / "b.rs").write_text("#[cfg(test)]\nmod tests {\n    use crate::{c, a::y};\n}\n")
        assert cycles(graph_of(crate)[0]) == [["a", "b"]], graph_of(crate)[0]


def main() -> int:
    self_test()
    failed = False
    for crate_dir in CRATES:
        crate = ROOT / crate_dir
        graph, witness = graph_of(crate)
        for comp in cycles(graph):
            failed = True
            print(f"{crate_dir}: modules {', '.join(comp)} import each other in a loop:", file=sys.stderr)
            for a in comp:
                for b in comp:
                    if b in graph.get(a, ()):
                        print(f"  {a} -> {b} (e.g. {pathlib.Path(witness[(a, b)]).relative_to(ROOT)})", file=sys.stderr)
    if not failed:
        print(f"{len(CRATES)} crates: no import cycle between top-level modules")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
