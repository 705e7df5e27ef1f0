#!/usr/bin/env python3
"""Render the six sample document pages in datasets/samples/ (PNG + metadata.yaml).

Needs Python 3 and Pillow (`/work/main/.venv/bin/python -m pip install Pillow`; any
Pillow >= 9.2 works) and the DejaVu fonts from the Debian package fonts-dejavu-core
(`apt-get install fonts-dejavu-core`). Output is deterministic: no randomness, fixed
text, fixed sizes; PNGs are written without timestamps.

Usage: python3 scripts/make_sample_pages.py [--out datasets/samples]

The page sizes differ on purpose (portrait, landscape, wide, square, tall), so
DeepSeek-OCR's gundam tiling picks different crop grids for each page.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    from PIL import Image, ImageDraw, ImageFont
except ImportError:  # pragma: no cover - message only
    sys.exit("Pillow is missing: python3 -m pip install Pillow")

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
SANS = FONT_DIR / "DejaVuSans.ttf"
SANS_BOLD = FONT_DIR / "DejaVuSans-Bold.ttf"
SANS_OBLIQUE = FONT_DIR / "DejaVuSans-Oblique.ttf"

INK = (20, 20, 20)
GREY = (110, 110, 110)
RULE = (60, 60, 60)
BAR_COLOURS = [(52, 101, 164), (204, 102, 51), (78, 154, 6), (117, 80, 123), (196, 160, 0)]


def font(path: Path, size: int) -> ImageFont.FreeTypeFont:
    if not path.exists():
        sys.exit(f"font {path} is missing: apt-get install fonts-dejavu-core")
    return ImageFont.truetype(str(path), size)


class Page:
    """A white page with a cursor that moves down as blocks are drawn."""

    def __init__(self, width: int, height: int, margin: int):
        self.img = Image.new("RGB", (width, height), "white")
        self.draw = ImageDraw.Draw(self.img)
        self.w, self.h, self.margin = width, height, margin
        self.y = margin
        self.left = margin
        self.right = width - margin

    def column(self, left: int, right: int, y: int) -> None:
        self.left, self.right, self.y = left, right, y

    def wrap(self, text: str, f: ImageFont.FreeTypeFont, width: int) -> list[str]:
        lines, line = [], ""
        for word in text.split():
            trial = f"{line} {word}".strip()
            if self.draw.textlength(trial, font=f) <= width:
                line = trial
            else:
                lines.append(line)
                line = word
        if line:
            lines.append(line)
        return lines

    def title(self, text: str, size: int) -> None:
        f = font(SANS_BOLD, size)
        self.draw.text((self.left, self.y), text, font=f, fill=INK)
        self.y += int(size * 1.6)

    def heading(self, text: str, size: int) -> None:
        f = font(SANS_BOLD, size)
        self.draw.text((self.left, self.y), text, font=f, fill=INK)
        self.y += int(size * 1.5)

    def paragraph(self, text: str, size: int) -> None:
        f = font(SANS, size)
        for line in self.wrap(text, f, self.right - self.left):
            self.draw.text((self.left, self.y), line, font=f, fill=INK)
            self.y += int(size * 1.4)
        self.y += int(size * 0.8)

    def caption(self, text: str, size: int, centre: bool = True) -> None:
        f = font(SANS_OBLIQUE, size)
        for line in self.wrap(text, f, self.right - self.left):
            x = self.left
            if centre:
                x = (self.left + self.right - self.draw.textlength(line, font=f)) / 2
            self.draw.text((x, self.y), line, font=f, fill=GREY)
            self.y += int(size * 1.4)
        self.y += int(size * 0.8)

    def table(self, rows: list[list[str]], size: int, col_widths: list[float]) -> None:
        """Ruled table; the first row is the header (bold). col_widths are fractions."""
        f, fb = font(SANS, size), font(SANS_BOLD, size)
        width = self.right - self.left
        xs = [self.left]
        for frac in col_widths:
            xs.append(xs[-1] + int(frac * width))
        row_h = int(size * 1.9)
        top = self.y
        self.draw.line([(xs[0], top), (xs[-1], top)], fill=RULE, width=2)
        for r, row in enumerate(rows):
            y = top + r * row_h
            for c, cell in enumerate(row):
                ff = fb if r == 0 else f
                if c == 0:
                    x = xs[c] + size // 2
                else:  # numbers right-aligned
                    x = xs[c + 1] - size // 2 - self.draw.textlength(cell, font=ff)
                self.draw.text((x, y + size * 0.4), cell, font=ff, fill=INK)
            if r == 0:
                self.draw.line([(xs[0], y + row_h), (xs[-1], y + row_h)], fill=RULE, width=1)
        bottom = top + len(rows) * row_h
        self.draw.line([(xs[0], bottom), (xs[-1], bottom)], fill=RULE, width=2)
        self.y = bottom + size

    def fraction_formula(self, lhs: str, num: str, den: str, size: int, tag: str) -> None:
        """`lhs = num / den` as a built-up fraction, centred, with an equation tag."""
        f = font(SANS_OBLIQUE, size)
        lhs_w = self.draw.textlength(lhs, font=f)
        num_w = self.draw.textlength(num, font=f)
        den_w = self.draw.textlength(den, font=f)
        frac_w = max(num_w, den_w) + size
        total = lhs_w + frac_w
        x0 = (self.left + self.right - total) / 2
        mid = self.y + int(size * 1.3)
        self.draw.text((x0, mid - size * 0.6), lhs, font=f, fill=INK)
        fx = x0 + lhs_w
        self.draw.text((fx + (frac_w - num_w) / 2, mid - size * 1.35), num, font=f, fill=INK)
        self.draw.line([(fx, mid), (fx + frac_w, mid)], fill=INK, width=max(1, size // 14))
        self.draw.text((fx + (frac_w - den_w) / 2, mid + size * 0.15), den, font=f, fill=INK)
        ft = font(SANS, size)
        self.draw.text((self.right - self.draw.textlength(tag, font=ft), mid - size * 0.6), tag, font=ft, fill=INK)
        self.y = mid + int(size * 2.0)

    def inline_formula(self, text: str, size: int, tag: str) -> None:
        f = font(SANS_OBLIQUE, size)
        w = self.draw.textlength(text, font=f)
        self.draw.text(((self.left + self.right - w) / 2, self.y), text, font=f, fill=INK)
        ft = font(SANS, size)
        self.draw.text((self.right - self.draw.textlength(tag, font=ft), self.y), tag, font=ft, fill=INK)
        self.y += int(size * 2.0)

    def bar_chart(self, labels: list[str], values: list[float], height: int, size: int) -> None:
        """Axes, bars with value labels and category labels (a 'figure')."""
        f = font(SANS, size)
        left, right = self.left + 3 * size, self.right - size
        top, base = self.y + size, self.y + height - 2 * size
        self.draw.line([(left, top), (left, base), (right, base)], fill=RULE, width=2)
        vmax = max(values)
        for t in range(5):
            v = vmax * t / 4
            y = base - (base - top) * t / 4
            self.draw.line([(left - 5, y), (left, y)], fill=RULE, width=1)
            label = f"{v:.0f}"
            self.draw.text((left - 8 - self.draw.textlength(label, font=f), y - size / 2), label, font=f, fill=GREY)
        slot = (right - left) / len(values)
        for i, (lab, v) in enumerate(zip(labels, values)):
            bx0 = left + i * slot + slot * 0.2
            bx1 = left + (i + 1) * slot - slot * 0.2
            by = base - (base - top) * v / vmax
            self.draw.rectangle([bx0, by, bx1, base], fill=BAR_COLOURS[i % len(BAR_COLOURS)])
            vl = f"{v:g}"
            self.draw.text(((bx0 + bx1 - self.draw.textlength(vl, font=f)) / 2, by - size * 1.3), vl, font=f, fill=INK)
            self.draw.text(((bx0 + bx1 - self.draw.textlength(lab, font=f)) / 2, base + size * 0.4), lab, font=f, fill=INK)
        self.y += height + size // 2


# ---------------------------------------------------------------------------------------------
# Page content. Each builder returns (image, kinds, ground-truth markdown).

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


def html_table(rows: list[list[str]]) -> str:
    out = ["<table>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    out.append("</table>")
    return "".join(out)


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
    p.fraction_formula("MFU = ", "FLOPs", "t · peak", 32, "(3)")
    p.bar_chart(["Run 1", "Run 2", "Run 3", "Run 4"], [512, 498, 505, 520], 430, 16)
    cap = "Figure 2. End-to-end latency (ms) of four runs."
    p.caption(cap, 19)
    p.table(FULL_ROWS, 20, [0.2, 0.35, 0.45])
    md = (
        "# Profiling a Vision-Language Model\n\n"
        f"{t1}\n\n{col_a}\n\n{col_b}\n\n"
        "$$\n\\mathrm{MFU}=\\frac{\\mathrm{FLOPs}}{t\\cdot\\mathrm{peak}} \\tag{3}\n$$\n\n"
        f"![](figure)\n\n{cap}\n\n{html_table(FULL_ROWS)}\n"
    )
    return p.img, ["title", "text", "formula", "figure", "caption", "table"], md


PAGES = [
    ("page-01-text.png", page_text),
    ("page-02-table.png", page_table),
    ("page-03-formula-wide.png", page_formula),
    ("page-04-figure.png", page_figure),
    ("page-05-square.png", page_mixed_square),
    ("page-06-full.png", page_full),
]


def yaml_block(text: str, indent: str) -> str:
    return "\n".join((indent + line) if line else "" for line in text.rstrip("\n").split("\n"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="datasets/samples", type=Path)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    meta = [
        "# Generated by scripts/make_sample_pages.py; do not edit by hand.",
        "# Per page: file, pixel size, content kinds drawn, and ground-truth markdown",
        "# (tables as HTML and formulas as LaTeX, like DeepSeek-OCR's output).",
        "font: DejaVu Sans (fonts-dejavu-core)",
        "pages:",
    ]
    for name, build in PAGES:
        img, kinds, md = build()
        # Anti-aliased text on white needs few colours: a 64-colour palette keeps files small.
        pal = img.quantize(colors=64, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        path = args.out / name
        pal.save(path, format="PNG", optimize=True)
        w, h = img.size
        meta += [
            f"  - file: {name}",
            f"    width: {w}",
            f"    height: {h}",
            f"    kinds: [{', '.join(kinds)}]",
            "    markdown: |",
            yaml_block(md, "      "),
        ]
        print(f"{path}  {w}x{h}  {path.stat().st_size} bytes")
    (args.out / "metadata.yaml").write_text("\n".join(meta) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
