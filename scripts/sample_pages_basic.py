"""The first six sample pages, page-01..page-06, unchanged since their first release, for
scripts/make_sample_pages.py (run that script, not this module).

A title with paragraphs, a ruled table, two formulas on a wide page, a bar chart, a square page
with a table, and a full page with two columns, a formula, a figure and a table. Each builder
returns (image, content kinds, ground-truth markdown); FIRST_PAGES lists them with their file
names (all are saved with 64 palette colours).
"""
from __future__ import annotations

from PIL import Image

from sample_pages_layout import Page, html_table, mfu_formula


LOREM_1 = (
    "Document understanding models read a page as an image and write its content back as text. "
    "This sample page exists so that the profiler has something realistic to feed the vision "
    "encoder without downloading a benchmark: a title, a few paragraphs, and nothing else."
)
LOREM_2 = (
    "The encoder splits large pages into tiles of 640 by 640 pixels and adds one global view of "
    "1024 by 1024 pixels. Each tile becomes 100 visual tokens and the global view becomes 256, so "
    "the prompt length depends on the page size and on the aspect ratio."
)
LOREM_3 = (
    "Decoding then produces one token at a time. A page of dense text may need several hundred "
    "new tokens, while a page with a single figure needs only a few dozen."
)


def page_text() -> tuple[Image.Image, list[str], str]:
    p = Page(800, 1100, 70)
    p.title("1. Reading Pages as Images", 34)
    p.paragraph(LOREM_1, 20)
    p.paragraph(LOREM_2, 20)
    p.heading("1.1 Decoding", 24)
    p.paragraph(LOREM_3, 20)
    md = (
        "# 1. Reading Pages as Images\n\n"
        f"{LOREM_1}\n\n{LOREM_2}\n\n## 1.1 Decoding\n\n{LOREM_3}\n"
    )
    return p.img, ["title", "text"], md


TABLE_ROWS = [
    ["Mode", "Base size", "Image size", "Tokens"],
    ["Tiny", "512", "512", "64"],
    ["Small", "640", "640", "100"],
    ["Base", "1024", "1024", "256"],
    ["Large", "1280", "1280", "400"],
    ["Gundam", "1024", "640", "256 + n x 100"],
]


def page_table() -> tuple[Image.Image, list[str], str]:
    p = Page(1100, 800, 70)
    p.title("Table 2. Resolution modes", 30)
    intro = "The five resolution modes trade visual tokens for detail. Gundam mode adds one tile per 640-pixel crop."
    p.paragraph(intro, 20)
    p.table(TABLE_ROWS, 22, [0.28, 0.22, 0.22, 0.28])
    note = "Token counts exclude the newline and separator embeddings."
    p.caption(note, 18, centre=False)
    md = f"# Table 2. Resolution modes\n\n{intro}\n\n{html_table(TABLE_ROWS)}\n\n{note}\n"
    return p.img, ["title", "text", "table"], md


def page_formula() -> tuple[Image.Image, list[str], str]:
    p = Page(1400, 700, 70)
    p.title("Appendix A. Two formulas", 30)
    t1 = "The roots of a quadratic equation with coefficients a, b and c are given by"
    p.paragraph(t1, 22)
    p.fraction_formula("x = ", "−b ± √(b² − 4ac)", "2a", 34, "(1)")
    t2 = "and the arithmetic intensity of a kernel is the ratio of floating-point work to memory traffic:"
    p.paragraph(t2, 22)
    p.inline_formula("I = FLOPs / bytes,   P ≤ min(π, β · I)", 30, "(2)")
    md = (
        "# Appendix A. Two formulas\n\n"
        f"{t1}\n\n"
        "$$\nx=\\frac{-b\\pm\\sqrt{b^{2}-4ac}}{2a} \\tag{1}\n$$\n\n"
        f"{t2}\n\n"
        "$$\nI=\\mathrm{FLOPs}/\\mathrm{bytes},\\quad P\\leq\\min(\\pi,\\beta\\cdot I) \\tag{2}\n$$\n"
    )
    return p.img, ["title", "text", "formula"], md


FIG_LABELS = ["SAM", "CLIP", "Proj.", "Prefill", "Decode"]
FIG_VALUES = [38, 21, 2, 64, 410]


def page_figure() -> tuple[Image.Image, list[str], str]:
    p = Page(700, 1000, 60)
    p.title("Where the time goes", 30)
    text = "Figure 1 shows the time spent in each region for one page in base mode, in milliseconds."
    p.paragraph(text, 19)
    p.bar_chart(FIG_LABELS, FIG_VALUES, 520, 16)
    cap = "Figure 1. Time per region (ms) for one page; decode dominates."
    p.caption(cap, 18)
    md = f"# Where the time goes\n\n{text}\n\n![](figure)\n\n{cap}\n"
    return p.img, ["title", "text", "figure", "caption"], md


MIX_ROWS = [["Region", "Share"], ["Vision", "12%"], ["Prefill", "13%"], ["Decode", "75%"]]


def page_mixed_square() -> tuple[Image.Image, list[str], str]:
    p = Page(900, 900, 60)
    p.title("Summary", 32)
    t1 = (
        "A square page. Pages whose sides are both at most 640 pixels are not tiled; this one is "
        "larger, so gundam mode splits it into a small grid of crops."
    )
    p.paragraph(t1, 21)
    p.table(MIX_ROWS, 21, [0.6, 0.4])
    t2 = "The shares above are illustrative and were not measured."
    p.paragraph(t2, 21)
    md = f"# Summary\n\n{t1}\n\n{html_table(MIX_ROWS)}\n\n{t2}\n"
    return p.img, ["title", "text", "table"], md


FULL_ROWS = [["Stage", "Tool", "Output"], ["1", "Kineto", "trace.json"], ["2", "Nsight", "report.nsys-rep"]]


def page_full() -> tuple[Image.Image, list[str], str]:
    p = Page(1200, 1600, 80)
    p.title("Profiling a Vision-Language Model", 40)
    t1 = (
        "This last page mixes every kind of content: two columns of text, a formula, a figure with "
        "a caption and a table. It is the largest sample and produces the longest prompt."
    )
    p.paragraph(t1, 22)
    top = p.y
    mid = (p.left + p.right) // 2
    col_a = (
        "The first column describes the method. The profiler runs the model several times, "
        "discards the warm-up runs, and records the time of each region with CUDA events."
    )
    col_b = (
        "The second column describes the results. Decode time grows with the number of output "
        "tokens, while the vision encoder cost depends only on the page size."
    )
    p.column(80, mid - 20, top)
    p.paragraph(col_a, 20)
    ya = p.y
    p.column(mid + 20, 1120, top)
    p.paragraph(col_b, 20)
    p.column(80, 1120, max(ya, p.y) + 10)
    mfu = mfu_formula(p, 32, 3)
    p.bar_chart(["Run 1", "Run 2", "Run 3", "Run 4"], [512, 498, 505, 520], 430, 16)
    cap = "Figure 2. End-to-end latency (ms) of four runs."
    p.caption(cap, 19)
    p.table(FULL_ROWS, 20, [0.2, 0.35, 0.45])
    md = (
        "# Profiling a Vision-Language Model\n\n"
        f"{t1}\n\n{col_a}\n\n{col_b}\n\n{mfu}\n\n"
        f"![](figure)\n\n{cap}\n\n{html_table(FULL_ROWS)}\n"
    )
    return p.img, ["title", "text", "formula", "figure", "caption", "table"], md


# The first six pages; the PAGES of sample_pages_text and sample_pages_graphics add the rest.
# (file name, builder)
FIRST_PAGES = [
    ("page-01-text.png", page_text),
    ("page-02-table.png", page_table),
    ("page-03-formula-wide.png", page_formula),
    ("page-04-figure.png", page_figure),
    ("page-05-square.png", page_mixed_square),
    ("page-06-full.png", page_full),
]
