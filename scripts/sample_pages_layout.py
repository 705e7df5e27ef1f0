"""Shared drawing base for all sample pages (run scripts/make_sample_pages.py, not this module).

Font paths (DejaVu Sans, Serif and Sans Mono; WenQuanYi Micro Hei for Chinese), colours, font(),
the class Page (a white page with a cursor: paragraphs, headings, captions, ruled tables, simple
formulas, bar charts), html_table() and mfu_formula(), and for the later pages bulleted lists,
CJK line breaking, fully ruled tables with merged cells and a tiny display-math typesetter. The
page builders themselves are in scripts/sample_pages_basic.py (pages 01-06),
scripts/sample_pages_text.py and scripts/sample_pages_graphics.py (pages 07-22).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
SANS = FONT_DIR / "DejaVuSans.ttf"
SANS_BOLD = FONT_DIR / "DejaVuSans-Bold.ttf"
SANS_OBLIQUE = FONT_DIR / "DejaVuSans-Oblique.ttf"
SERIF = FONT_DIR / "DejaVuSerif.ttf"
SERIF_BOLD = FONT_DIR / "DejaVuSerif-Bold.ttf"
MONO = FONT_DIR / "DejaVuSansMono.ttf"
MONO_BOLD = FONT_DIR / "DejaVuSansMono-Bold.ttf"
CJK = FONT_DIR.parent / "wqy" / "wqy-microhei.ttc"  # WenQuanYi Micro Hei, fonts-wqy-microhei

FONT_PACKAGES = "fonts-dejavu-core fonts-dejavu-extra fonts-wqy-microhei"
FONTS_USED = (
    "DejaVu Sans, DejaVu Serif and DejaVu Sans Mono (fonts-dejavu-core, fonts-dejavu-extra); "
    "WenQuanYi Micro Hei (fonts-wqy-microhei)"
)

INK = (20, 20, 20)
GREY = (110, 110, 110)
RULE = (60, 60, 60)
BAR_COLOURS = [(52, 101, 164), (204, 102, 51), (78, 154, 6), (117, 80, 123), (196, 160, 0)]
NAVY = (32, 74, 135)

# What each page builder returns: (image, content kinds, ground-truth markdown)
Result = "tuple[Image.Image, list[str], str]"


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
# Text and table helpers on top of Page


def bullets(p: Page, items: list[str], size: int, marks: list[str] | None = None) -> str:
    """A bulleted (or, with marks, numbered) list; returns it as markdown."""
    f = font(SANS, size)
    for k, item in enumerate(items):
        mark = marks[k] if marks else "•"
        p.draw.text((p.left + size // 2, p.y), mark, font=f, fill=INK)
        lines = p.wrap(item, f, p.right - p.left - 2 * size)
        for line in lines:
            p.draw.text((p.left + 2 * size, p.y), line, font=f, fill=INK)
            p.y += int(size * 1.4)
        p.y += int(size * 0.3)
    p.y += int(size * 0.6)
    return "\n".join(f"{marks[k] if marks else '-'} {item}" for k, item in enumerate(items))


def cjk_wrap(draw: ImageDraw.ImageDraw, text: str, f, width: float) -> list[str]:
    """Break between any two CJK characters but not inside a Latin word or a number, and never
    put closing punctuation at the start of a line."""
    lines, line = [], ""
    for piece in re.findall(r"[A-Za-z0-9×.\-]+|.", text):
        if draw.textlength(line + piece, font=f) <= width or (piece in "，。、；：？！）》" and line):
            line += piece
        else:
            lines.append(line.rstrip())
            line = piece.lstrip()
    return lines + [line] if line else lines


def cjk_block(p: Page, text: str, size: int, gap=0.8) -> None:
    f = font(CJK, size)
    for line in cjk_wrap(p.draw, text, f, p.right - p.left):
        p.draw.text((p.left, p.y), line, font=f, fill=INK)
        p.y += int(size * 1.6)
    p.y += int(size * gap)


def span_table(p: Page, rows: list[list], size: int, col_widths: list[float], header_rows=1,
               path=SANS, bold=SANS_BOLD) -> str:
    """Fully ruled table whose cells are "text" or ("text", rowspan, colspan), placed like
    HTML does; returns the same table as HTML for the ground truth."""
    f, fb = font(path, size), font(bold, size)
    xs = p.col_edges(col_widths)
    row_h = int(size * 2.1)
    taken: set[tuple[int, int]] = set()
    html = ["<table>"]
    for r, row in enumerate(rows):
        c, cells = 0, []
        for cell in row:
            text, rs, cs = (cell, 1, 1) if isinstance(cell, str) else cell
            while (r, c) in taken:
                c += 1
            taken.update((r + dr, c + dc) for dr in range(rs) for dc in range(cs))
            box = [xs[c], p.y + r * row_h, xs[c + cs], p.y + (r + rs) * row_h]
            head = r < header_rows
            p.draw.rectangle(box, fill=(232, 236, 242) if head else None, outline=RULE, width=2)
            p.draw.text(((box[0] + box[2]) / 2, (box[1] + box[3]) / 2), text,
                        font=fb if head else f, fill=INK, anchor="mm")
            attrs = (f' rowspan="{rs}"' if rs > 1 else "") + (f' colspan="{cs}"' if cs > 1 else "")
            cells.append(f"<td{attrs}>{text}</td>")
            c += cs
        html.append("<tr>" + "".join(cells) + "</tr>")
    p.y += len(rows) * row_h + size
    return "".join(html + ["</table>"])


# ---------------------------------------------------------------------------------------------
# A tiny display-math typesetter: nodes are str (upright), ("it", s), ("row", [..]),
# ("sup", base, sup), ("sub", base, sub), ("subsup", base, sub, sup), ("frac", num, den),
# ("sqrt", body), ("op", symbol, lower, upper) with limits above and below, ("int", lower, upper),
# ("paren", body). lay() returns (width, ascent, descent, paint(draw, x, baseline)).


def lay(n, s: float):
    if isinstance(n, str) or n[0] == "it":
        text, f = (n, font(SANS, round(s))) if isinstance(n, str) else (n[1], font(SANS_OBLIQUE, round(s)))
        _, t, _, b = f.getbbox(text, anchor="ls")
        return f.getlength(text), max(-t, 0), max(b, 0), \
            lambda d, x, y: d.text((x, y), text, font=f, fill=INK, anchor="ls")
    kind, axis, rule = n[0], 0.32 * s, max(1, round(s / 15))
    if kind == "row":
        parts = [lay(c, s) for c in n[1]]

        def paint_row(d, x, y):
            for w, _, _, paint in parts:
                paint(d, x, y)
                x += w
        return sum(q[0] for q in parts), max(q[1] for q in parts), max(q[2] for q in parts), paint_row
    if kind in ("sup", "sub", "subsup"):
        bw, ba, bd, bp = lay(n[1], s)
        scripts = [(lay(n[2], 0.7 * s), kind != "sup"), (lay(n[-1], 0.7 * s), kind != "sub")]
        scripts = [(q, -max(0.45 * s, ba - 0.5 * q[1]) if up else 0.25 * s + 0.3 * q[1])
                   for (q, keep), up in zip(scripts, (kind == "sup", True)) if keep]

        def paint_script(d, x, y):
            bp(d, x, y)
            for q, dy in scripts:
                q[3](d, x + bw + 0.04 * s, y + dy)
        return (bw + max(q[0] for q, _ in scripts) + 0.08 * s, max([ba] + [q[1] - dy for q, dy in scripts]),
                max([bd] + [q[2] + dy for q, dy in scripts]), paint_script)
    if kind == "frac":
        (nw, na, nd, np_), (dw, da, dd, dp) = lay(n[1], 0.9 * s), lay(n[2], 0.9 * s)
        w, gap = max(nw, dw) + 0.3 * s, 0.24 * s

        def paint_frac(d, x, y):
            np_(d, x + (w - nw) / 2, y - axis - gap - nd)
            d.line([(x, y - axis), (x + w, y - axis)], fill=INK, width=rule)
            dp(d, x + (w - dw) / 2, y - axis + gap + da)
        return w + 0.1 * s, axis + gap + na + nd, da + dd + gap - axis, paint_frac
    if kind == "sqrt":
        bw, ba, bd, bp = lay(n[1], s)
        top = ba + 0.18 * s
        rw = max(0.55 * s, 0.22 * (top + bd))

        def paint_sqrt(d, x, y):
            d.line([(x, y - 0.35 * ba), (x + 0.12 * s, y - 0.42 * ba), (x + rw / 2, y + bd),
                    (x + rw, y - top), (x + rw + bw + 0.1 * s, y - top)], fill=INK, width=rule)
            bp(d, x + rw + 0.05 * s, y)
        return rw + bw + 0.2 * s, top + rule, bd, paint_sqrt
    if kind in ("op", "int"):
        g = font(SANS, round(1.7 * s if kind == "op" else 2.0 * s))
        symbol = n[1] if kind == "op" else "∫"
        gl, gt, gr, gb = g.getbbox(symbol, anchor="ls")
        gy = -axis - (gt + gb) / 2  # glyph baseline, relative, so the glyph centres on the axis
        lo, up = lay(n[2] if kind == "op" else n[1], 0.7 * s), lay(n[3] if kind == "op" else n[2], 0.7 * s)
        gw = g.getlength(symbol)
        if kind == "op":
            w = max(gw, lo[0], up[0]) + 0.2 * s
            lo_at = ((w - lo[0]) / 2, gy + gb + 0.12 * s + lo[1])
            up_at = ((w - up[0]) / 2, gy + gt - 0.12 * s - up[2])
            gx = (w - gw) / 2
        else:
            w, gx = gw + max(lo[0], up[0]) + 0.15 * s, 0
            lo_at, up_at = (gw - 0.1 * s, gy + gb), (gw + 0.1 * s, gy + gt + up[1])

        def paint_op(d, x, y):
            d.text((x + gx, y + gy), symbol, font=g, fill=INK, anchor="ls")
            lo[3](d, x + lo_at[0], y + lo_at[1])
            up[3](d, x + up_at[0], y + up_at[1])
        asc = max(-(gy + gt), -(up_at[1] - up[1]))
        return w, asc, max(gy + gb, lo_at[1] + lo[2]), paint_op
    if kind == "paren":  # stretched parentheses drawn as elliptic arcs
        bw, ba, bd, bp = lay(n[1], s)
        top, bot = ba + 0.15 * s, bd + 0.15 * s
        arc_w = 0.9 * (top + bot)  # the arc spans 120 degrees: a quarter of this wide
        pw = arc_w / 4 + 0.12 * s

        def paint_paren(d, x, y):
            box = [x + 0.08 * s, y - top, x + 0.08 * s + arc_w, y + bot]
            d.arc(box, 120, 240, fill=INK, width=rule + 1)
            box = [x + 2 * pw + bw - 0.08 * s - arc_w, y - top, x + 2 * pw + bw - 0.08 * s, y + bot]
            d.arc(box, -60, 60, fill=INK, width=rule + 1)
            bp(d, x + pw, y)
        return bw + 2 * pw, top, bot, paint_paren
    raise ValueError(kind)


def display(p: Page, node, size: int, tag: str) -> None:
    """A centred display formula with its equation tag at the right margin."""
    w, asc, desc, paint = lay(node, size)
    y = p.y + asc
    paint(p.draw, (p.left + p.right - w) / 2, y)
    p.tag(tag, size, y, anchor="ls")
    p.y = int(y + desc + 0.9 * size)


def it(s: str):
    return ("it", s)


def row(*items):
    return ("row", list(items))


# ---------------------------------------------------------------------------------------------
# Markdown for the ground truth


def html_table(rows: list[list[str]]) -> str:
    out = ["<table>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    out.append("</table>")
    return "".join(out)


def mfu_formula(p: Page, size: int, k: int) -> str:
    """Model FLOPs utilisation as a built-up fraction tagged (k); returns its LaTeX display."""
    p.fraction_formula("MFU = ", "FLOPs", "t · peak", size, f"({k})")
    return f"$$\n\\mathrm{{MFU}}=\\frac{{\\mathrm{{FLOPs}}}}{{t\\cdot\\mathrm{{peak}}}} \\tag{{{k}}}\n$$"
