#!/usr/bin/env python3
"""Check that the relative links of the project's Markdown pages resolve.

Usage: scripts/check_md_links.py [--mentions] [FILE ...]
  (default files: README.md, docs/*.md, reports/*.md)

- Every relative Markdown link, [text](path) or [text](path#anchor), must name an existing file
  or folder (relative to the page); an anchor into a .md file must match one of its headings
  (GitHub's slugs: lower case, punctuation dropped, spaces to hyphens, -1, -2 … for repeats).
  Broken links are errors (exit 1).
- With --mentions, paths written as text (`docs/x.md`, reports/gpu-runs/<folder>/…, and in
  reports/ also gpu-runs/…) are checked too and listed as warnings: paths with placeholders or
  globs are skipped, {a,b} is expanded. Warnings do not change the exit status.
"""
import glob
import os
import re
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
REFDEF = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)
MENTION = re.compile(r"(?<![\w/.\-])((?:docs|reports|scripts|src|tests|conf|gpu-runs)/[\w.\-/{},*]+)")


def slug(heading):
    text = re.sub(r"<[^>]+>", "", heading.strip()).lower()
    kept = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in " -_" or cat[0] in "LNM" or cat == "Pc":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, out, fence = {}, set(), False
        for line in open(path, encoding="utf-8"):
            if line.lstrip().startswith(("```", "~~~")):
                fence = not fence
                continue
            m = None if fence else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(2))
                n = seen.get(s, 0)
                seen[s] = n + 1
                out.add(s if n == 0 else f"{s}-{n}")
        cache[path] = out
    return cache[path]


def strip_code_fences(text):
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def expand(p):
    m = re.search(r"\{([^{}]*)\}", p)
    if not m:
        return [p]
    return [q for alt in m.group(1).split(",") for q in expand(p[: m.start()] + alt + p[m.end():])]


def check_links(md):
    errors = []
    text = strip_code_fences(open(md, encoding="utf-8").read())
    here = os.path.dirname(md)
    targets = [t for t in LINK.findall(text) + IMAGE.findall(text) + REFDEF.findall(text)
               if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]  # http:, https:, mailto: skipped
    for t in targets:
        path, _, frag = t.partition("#")
        full = os.path.normpath(os.path.join(here, path)) if path else md
        if not os.path.exists(full):
            errors.append(f"{os.path.relpath(md, ROOT)}: ({t}): no such file")
        elif frag and full.endswith(".md") and frag not in anchors(full):
            errors.append(f"{os.path.relpath(md, ROOT)}: ({t}): no heading with that anchor")
    return len(targets), errors


def check_mentions(md):
    warnings = []
    here = os.path.dirname(md)
    for n, line in enumerate(open(md, encoding="utf-8"), 1):
        for raw in MENTION.findall(line):
            p = raw.rstrip(".,:;")
            if any(c in p for c in "<>*…") or p.endswith("/-"):
                continue
            for q in expand(p):
                bases = [ROOT] if not q.startswith("gpu-runs/") else [here]
                if not any(os.path.exists(os.path.join(b, q)) for b in bases):
                    warnings.append(f"{os.path.relpath(md, ROOT)}:{n}: {q}")
    return warnings


def main(argv):
    mentions = "--mentions" in argv
    files = [a for a in argv if not a.startswith("--")]
    if not files:
        files = [os.path.join(ROOT, "README.md")] + sorted(
            glob.glob(os.path.join(ROOT, "docs", "*.md")) + glob.glob(os.path.join(ROOT, "reports", "*.md")))
    files = [os.path.abspath(f) for f in files]
    count, errors, warnings = 0, [], []
    for md in files:
        c, e = check_links(md)
        count += c
        errors += e
        if mentions:
            warnings += check_mentions(md)
    for e in errors:
        print("error:", e)
    for w in warnings:
        print("warning: path mentioned but absent:", w)
    print(f"{len(files)} files, {count} relative links checked, {len(errors)} broken"
          + (f"; {len(warnings)} mentioned paths absent" if mentions else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
