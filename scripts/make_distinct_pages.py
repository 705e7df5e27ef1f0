#!/usr/bin/env python3
"""Writes N distinct pages of one page's size for the distinct-pages decode row of
scripts/bench_vs_hf.sh: page i is the source page shifted cyclically by (i·29, i·17) pixels. Same
size, so the same crop grid and image-token count (no padding in the batch); distinct content, so
with random weights each row decodes its own token stream and routes to its own experts.

Usage: make_distinct_pages.py SOURCE.png N OUT_DIR   (needs Pillow)
"""
from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not argv[1].isdigit() or int(argv[1]) < 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        from PIL import Image, ImageChops
    except ImportError:
        print("make_distinct_pages: Pillow is missing (pip install pillow)", file=sys.stderr)
        return 3
    source, n, out = Path(argv[0]), int(argv[1]), Path(argv[2])
    page = Image.open(source).convert("RGB")
    w, h = page.size
    out.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        ImageChops.offset(page, (i * 29) % w, (i * 17) % h).save(out / f"page-{i:03d}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
