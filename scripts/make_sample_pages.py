#!/usr/bin/env python3
"""Render the sample document pages in datasets/samples/ (PNG + metadata.yaml).

Needs Python 3 and Pillow (`python3 -m pip install Pillow`; any Pillow >= 9.2 works), the
DejaVu fonts from the Debian packages fonts-dejavu-core and fonts-dejavu-extra (the oblique
faces) and the CJK font WenQuanYi Micro Hei from fonts-wqy-microhei (`apt-get install
fonts-dejavu-core fonts-dejavu-extra fonts-wqy-microhei`). Output is deterministic: fixed text
and sizes, no global random state (scan noise and handwriting jitter come from seeded
random.Random instances), and PNGs are written without timestamps.

Usage: python3 scripts/make_sample_pages.py [--out datasets/samples]

This file holds the drawing primitives (class Page), the first six pages (page-01..page-06,
unchanged since their first release), DeepSeek-OCR's gundam grid rule and the writer of the
PNGs and metadata.yaml. The later pages (page-07 on) are built by scripts/sample_pages_text.py
(text-heavy pages) and scripts/sample_pages_graphics.py (charts, pictures, scans, handwriting)
with the shared helpers of scripts/sample_pages_layout.py.
Page sizes differ on purpose (portrait, landscape, wide, square, tall, tiny, very large) so
that gundam tiling picks many different crop grids; metadata.yaml records each page's grid
and image-token count.
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

FONT_PACKAGES = "fonts-dejavu-core fonts-dejavu-extra fonts-wqy-microhei"

INK = (20, 20, 20)
GREY = (110, 110, 110)
RULE = (60, 60, 60)
BAR_COLOURS = [(52, 101, 164), (204, 102, 51), (78, 154, 6), (117, 80, 123), (196, 160, 0)]


def font(path: Path, size: int) -> ImageFont.FreeTypeFont:
    if not path.exists():
        sys.exit(f"font {path} is missing: apt-get install {FONT_PACKAGES}")
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

    def block(self, text: str, path: Path, size: int, fill=INK, leading=1.4, gap=0.8,
              centre: bool = False) -> None:
        """A word-wrapped paragraph in any font at the cursor, left-aligned or centred."""
        f = font(path, size)
        for line in self.wrap(text, f, self.right - self.left):
            x = (self.left + self.right - self.draw.textlength(line, font=f)) / 2 if centre else self.left
            self.draw.text((x, self.y), line, font=f, fill=fill)
            self.y += int(size * leading)
        self.y += int(size * gap)

    def paragraph(self, text: str, size: int) -> None:
        self.block(text, SANS, size)

    def caption(self, text: str, size: int, centre: bool = True) -> None:
        self.block(text, SANS_OBLIQUE, size, fill=GREY, centre=centre)

    def col_edges(self, col_widths: list[float]) -> list[int]:
        """x of the left edge of each table column and of the last one's right edge; col_widths
        are fractions of the text width (right - left)."""
        xs = [self.left]
        for frac in col_widths:
            xs.append(xs[-1] + int(frac * (self.right - self.left)))
        return xs

    def tag(self, text: str, size: int, y: float, **anchor) -> None:
        """An equation tag such as "(1)", right-aligned at the right margin."""
        ft = font(SANS, size)
        self.draw.text((self.right - self.draw.textlength(text, font=ft), y), text, font=ft, fill=INK, **anchor)

    def table(self, rows: list[list[str]], size: int, col_widths: list[float]) -> None:
        """Ruled table; the first row is the header (bold). col_widths are fractions."""
        f, fb = font(SANS, size), font(SANS_BOLD, size)
        xs = self.col_edges(col_widths)
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
        self.tag(tag, size, mid - size * 0.6)
        self.y = mid + int(size * 2.0)

    def inline_formula(self, text: str, size: int, tag: str) -> None:
        f = font(SANS_OBLIQUE, size)
        w = self.draw.textlength(text, font=f)
        self.draw.text(((self.left + self.right - w) / 2, self.y), text, font=f, fill=INK)
        self.tag(tag, size, self.y)
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


def mfu_formula(p: Page, size: int, k: int) -> str:
    """Model FLOPs utilisation as a built-up fraction tagged (k); returns its LaTeX display."""
    p.fraction_formula("MFU = ", "FLOPs", "t · peak", size, f"({k})")
    return f"$$\n\\mathrm{{MFU}}=\\frac{{\\mathrm{{FLOPs}}}}{{t\\cdot\\mathrm{{peak}}}} \\tag{{{k}}}\n$$"


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

# ---------------------------------------------------------------------------------------------
# DeepSeek-OCR gundam mode (src/llmprof/model/deepseek_ocr/views.rs and prompt.rs).

TILE, MIN_CROPS, MAX_CROPS = 640, 2, 9
BASE_SIZE, PIXELS_PER_TOKEN = 1024, 64


def gundam_grid(width: int, height: int) -> tuple[int, int]:
    """(cols, rows) of `dynamic_preprocess`: 1x1 when the page fits one tile, else the grid with
    2..9 tiles whose cols/rows is closest to width/height; on an exact tie a later grid (sorted
    by tile count, cols, rows) wins only if width*height > 0.5 * 640^2 * tiles."""
    if width <= TILE and height <= TILE:
        return (1, 1)
    grids = sorted(
        ((i, j) for i in range(1, MAX_CROPS + 1) for j in range(1, MAX_CROPS + 1)
         if MIN_CROPS <= i * j <= MAX_CROPS),
        key=lambda g: (g[0] * g[1], g[0], g[1]),
    )
    aspect = width / height
    best, best_diff = (1, 1), float("inf")
    for i, j in grids:
        diff = abs(aspect - i / j)
        if diff < best_diff:
            best, best_diff = (i, j), diff
        elif diff == best_diff and width * height > 0.5 * TILE * TILE * i * j:
            best = (i, j)
    return best


def image_tokens(grid: tuple[int, int]) -> int:
    """Image placeholder tokens, layout "rows with newlines": the 1024-px global view gives
    16 rows of 16 tokens plus a newline each, plus one separator; tiles add (rows*10) rows of
    (cols*10 + 1) tokens."""
    h, h2 = BASE_SIZE // PIXELS_PER_TOKEN, TILE // PIXELS_PER_TOKEN
    n = h * (h + 1) + 1
    cols, rows = grid
    if cols > 1 or rows > 1:
        n += (rows * h2) * (cols * h2 + 1)
    return n


def yaml_block(text: str, indent: str) -> str:
    return "\n".join((indent + line) if line else "" for line in text.rstrip("\n").split("\n"))


def save_png(img: Image.Image, path: Path, colours: int) -> None:
    """Palette PNG without dithering (anti-aliased text on a flat page needs few colours, and
    flat colour runs compress well); greyscale images are saved as 8-bit greyscale."""
    if img.mode == "L":
        img.save(path, format="PNG", optimize=True)
        return
    pal = img.quantize(colors=colours, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    pal.save(path, format="PNG", optimize=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="datasets/samples", type=Path)
    args = ap.parse_args()
    # Imported here: they import this module's primitives.
    import sample_pages_graphics
    import sample_pages_layout
    import sample_pages_text

    args.out.mkdir(parents=True, exist_ok=True)
    meta = [
        "# Generated by scripts/make_sample_pages.py; do not edit by hand.",
        "# Per page: file, pixel size, content kinds drawn, DeepSeek-OCR gundam crop grid",
        "# [cols, rows] and image-token count, and ground-truth markdown (tables as HTML and",
        "# formulas as LaTeX, like DeepSeek-OCR's output).",
        f"font: {sample_pages_layout.FONTS_USED}",
        "pages:",
    ]
    # (file name, builder, palette colours), sorted by file name, i.e. by page number
    pages = [(n, b, 64) for n, b in FIRST_PAGES] + sample_pages_text.PAGES + sample_pages_graphics.PAGES
    pages.sort(key=lambda page: page[0])
    grids, total = set(), 0
    for name, build, colours in pages:
        img, kinds, md = build()
        assert md.startswith("# "), name
        path = args.out / name
        save_png(img, path, colours)
        w, h = img.size
        grid = gundam_grid(w, h)
        grids.add(grid)
        meta += [
            f"  - file: {name}",
            f"    width: {w}",
            f"    height: {h}",
            f"    kinds: [{', '.join(kinds)}]",
            f"    gundam_grid: [{grid[0]}, {grid[1]}]",
            f"    image_tokens: {image_tokens(grid)}",
            "    markdown: |",
            yaml_block(md, "      "),
        ]
        size = path.stat().st_size
        total += size
        print(f"{path}  {w}x{h}  grid {grid[0]}x{grid[1]}  {image_tokens(grid)} tokens  {size} bytes")
    (args.out / "metadata.yaml").write_text("\n".join(meta) + "\n", encoding="utf-8")
    print(f"{len(pages)} pages, {total} bytes, {len(grids)} distinct gundam grids")


if __name__ == "__main__":
    # The sample_pages_* modules do `from make_sample_pages import ...`: let that name this module
    # instead of loading the file a second time.
    sys.modules.setdefault("make_sample_pages", sys.modules[__name__])
    main()
