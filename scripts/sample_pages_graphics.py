"""Graphics-heavy and image-processed sample pages for scripts/make_sample_pages.py (run that
script, not this module).

A line chart, a photo-like figure, a narrow receipt, a 16:9 slide, a very large poster, a skewed
scan and handwriting. Each builder returns (RGB or greyscale image, content kinds, ground-truth
markdown); PAGES lists them with their file names and palette sizes.
Randomness (scan noise, handwriting jitter) comes from random.Random instances with fixed seeds,
never from the global generator.
"""
from __future__ import annotations

import math
import random

from PIL import Image, ImageChops, ImageDraw, ImageOps

from sample_pages_layout import (
    BAR_COLOURS, GREY, INK, MONO, MONO_BOLD, NAVY, RULE, SANS, SANS_BOLD, SANS_OBLIQUE, SERIF,
    SERIF_BOLD, Page, Result, bullets, font, html_table, mfu_formula,
)


def line_chart(p: Page, xs: list[int], series, height: int, size: int, ymax: float, ystep: float,
               xlabel: str, ylabel: str) -> None:
    """Axes with grid lines, one polyline with markers per series, and a legend box."""
    f = font(SANS, size)
    left, right = p.left + 5 * size, p.right - size
    top, base = p.y + size, p.y + height - 3 * size
    n = int(round(ymax / ystep))
    for t in range(n + 1):
        y = base - (base - top) * t / n
        p.draw.line([(left, y), (right, y)], fill=(225, 225, 225) if t else RULE, width=1 if t else 2)
        lab = f"{t * ystep:g}"
        p.draw.text((left - 10, y), lab, font=f, fill=GREY, anchor="rm")
    p.draw.line([(left, top), (left, base)], fill=RULE, width=2)
    px = [left + (right - left) * (k + 0.5) / len(xs) for k in range(len(xs))]
    for x, v in zip(px, xs):
        p.draw.line([(x, base), (x, base + 6)], fill=RULE, width=1)
        p.draw.text((x, base + 10), str(v), font=f, fill=INK, anchor="ma")
    p.draw.text(((left + right) / 2, base + 2 * size), xlabel, font=f, fill=INK, anchor="ma")
    ylab = Image.new("L", (int(p.draw.textlength(ylabel, font=f)) + 4, size + 8), 0)
    ImageDraw.Draw(ylab).text((2, 2), ylabel, font=f, fill=255)
    ylab = ylab.rotate(90, expand=True)
    p.img.paste(INK, (p.left, int((top + base - ylab.height) / 2)), ylab)
    for k, (name, values, colour) in enumerate(series):
        pts = [(x, base - (base - top) * v / ymax) for x, v in zip(px, values)]
        p.draw.line(pts, fill=colour, width=max(3, size // 8))
        for x, y in pts:
            r = max(6, size // 4)
            if k % 2 == 0:
                p.draw.ellipse([x - r, y - r, x + r, y + r], fill=colour)
            else:
                p.draw.rectangle([x - r, y - r, x + r, y + r], fill=colour)
        ly = top + 10 + k * int(size * 1.6)
        p.draw.line([(left + 30, ly + size / 2), (left + 30 + 3 * size, ly + size / 2)], fill=colour,
                    width=max(3, size // 8))
        p.draw.text((left + 40 + 3 * size, ly), name, font=f, fill=INK)
    p.y += height + size


def page_chart() -> Result:
    p = Page(1600, 900, 70)
    title = "Latency against Output Length"
    p.title(title, 32)
    text = ("End-to-end latency roughly doubles each time the number of generated tokens doubles; "
            "gundam mode adds a roughly constant cost for its longer prompt.")
    p.paragraph(text, 21)
    series = [("Base mode", [1.6, 3.0, 5.9, 11.6, 23.3], BAR_COLOURS[0]),
              ("Gundam mode", [2.1, 3.5, 6.4, 12.2, 23.9], BAR_COLOURS[1])]
    line_chart(p, [128, 256, 512, 1024, 2048], series, 560, 18, 25, 5, "Output tokens",
               "Latency (s)")
    cap = "Figure 3. Latency (s) against output tokens for base and gundam modes; illustrative values."
    p.caption(cap, 19)
    return p.img, ["title", "text", "figure", "chart", "caption"], \
        f"# {title}\n\n{text}\n\n![](figure)\n\n{cap}\n"


def gradient(w: int, h: int, top, bottom) -> Image.Image:
    return ImageOps.colorize(Image.linear_gradient("L").resize((w, h)), top, bottom)


def synthetic_photo(w: int, h: int) -> Image.Image:
    """A smooth landscape at dusk: gradients and flat shapes only, so it compresses well."""
    horizon = int(h * 0.62)
    img = gradient(w, horizon, (38, 62, 120), (246, 186, 128))
    img = img.crop((0, 0, w, h))
    glow = ImageOps.invert(Image.radial_gradient("L").resize((w // 2, w // 2)))
    glow = glow.point(lambda v: max(0, v - 90) * 2)
    sx, sy = int(w * 0.68), int(horizon * 0.62)
    img.paste((255, 226, 160), (sx - w // 4, sy - w // 4), glow)
    d = ImageDraw.Draw(img)
    d.ellipse([sx - 38, sy - 38, sx + 38, sy + 38], fill=(255, 243, 205))
    for amp, base, colour, phase in ((70, 0.40, (92, 92, 132), 0.0), (48, 0.22, (58, 66, 96), 1.7)):
        pts = [(0, horizon)]
        for x in range(0, w + 20, 20):
            y = horizon - base * horizon * 0.5 - amp * (math.sin(x / 97 + phase) + 0.6 * math.sin(x / 41 + 2 * phase))
            pts.append((x, y))
        d.polygon(pts + [(w, horizon)], fill=colour)
    sky = img.crop((0, 0, w, horizon))
    water = ImageOps.flip(sky).crop((0, 0, w, h - horizon))
    water = Image.blend(water, Image.new("RGB", water.size, (22, 40, 70)), 0.45)
    img.paste(water, (0, horizon))
    for k in range(9):  # sun reflection streaks
        y = horizon + 14 + k * 16
        half = 60 - k * 5
        d.line([(sx - half, y), (sx + half, y)], fill=(236, 200, 150), width=3)
    d.polygon([(0, h), (0, h - 70), (w * 0.3, h - 40), (w * 0.45, h - 12), (w * 0.5, h)], fill=(18, 28, 30))
    return img


def page_photo() -> Result:
    p = Page(1200, 900, 80)
    title = "Field Notes: Lake at Dusk"
    p.title(title, 32)
    text = ("Not every page is text. The picture below is smooth and colourful, like a photograph, "
            "and carries no words at all; only its caption should be transcribed.")
    p.paragraph(text, 21)
    photo = synthetic_photo(p.right - p.left, 540)
    p.img.paste(photo, (p.left, p.y))
    p.y += photo.height + 20
    cap = "Figure 4. A synthetic landscape at dusk: sky, sun, mountains and their reflection."
    p.caption(cap, 19)
    return p.img, ["title", "text", "figure", "photo", "caption"], \
        f"# {title}\n\n{text}\n\n![](figure)\n\n{cap}\n"


RECEIPT_ITEMS = [("Sourdough loaf", 420), ("Croissant x3", 585), ("Rye rolls x6", 390),
                 ("Cinnamon bun", 275), ("Flat white", 310), ("Orange juice", 260),
                 ("Oat cookie x2", 300), ("Seeded bagel", 195)]


def page_receipt() -> Result:
    p = Page(500, 1600, 30)
    f, fb, big = font(MONO, 24), font(MONO_BOLD, 24), font(MONO_BOLD, 36)
    cx, lh = p.w // 2, 46
    sep = "-" * int((p.right - p.left) // p.draw.textlength("-", font=f))
    md_rows = []

    def centre(text, ff=f, h=lh):
        p.draw.text((cx, p.y), text, font=ff, fill=INK, anchor="ma")
        p.y += h

    def pair(left, right, ff=f):
        p.draw.text((p.left, p.y), left, font=ff, fill=INK)
        p.draw.text((p.right, p.y), right, font=ff, fill=INK, anchor="ra")
        p.y += lh
        md_rows.append([left, right])

    p.y = 50
    centre("CORNER BAKERY", big, 60)
    header = ["12 Mill Street, Leeds", "Tel 0113 496 0000", "2024-03-05 08:42 Till 2"]
    for line in header:
        centre(line)
    centre(sep)
    for name, cents in RECEIPT_ITEMS:
        pair(name, f"{cents / 100:.2f}")
    centre(sep)
    total = sum(c for _, c in RECEIPT_ITEMS)
    pair("SUBTOTAL", f"{total / 100:.2f}")
    pair("VAT 0%", "0.00")
    pair("TOTAL", f"{total / 100:.2f}", fb)
    pair("CARD", f"{total / 100:.2f}")
    centre(sep)
    footer = ["THANK YOU FOR VISITING", "Please keep your receipt"]
    for line in footer:
        centre(line)
    p.y += 40
    x, k = cx - 180, 0
    while x < cx + 170:  # a barcode-like pattern derived from the digits (not a real symbology)
        digit = int("5012345678900"[k % 13])
        p.draw.rectangle([x, p.y, x + 1 + digit % 3, p.y + 130], fill=INK)
        x += 4 + digit % 3 + (digit + k) % 4
        k += 1
    p.y += 142
    tail = ["5 012345 678900", "Open daily 7:00-18:00"]
    for line in tail:
        centre(line)
    rows_html = html_table(md_rows)
    md = ("# CORNER BAKERY\n\n" + "\n\n".join(header) + f"\n\n{rows_html}\n\n"
          + "\n\n".join(footer + tail) + "\n")
    return p.img, ["title", "text", "table", "receipt"], md


def page_slide() -> Result:
    p = Page(1920, 1080, 110)
    title = "Where Does OCR Time Go?"
    p.draw.rectangle([0, 0, p.w, 200], fill=NAVY)
    p.draw.text((p.left, 100), title, font=font(SANS_BOLD, 72), fill="white", anchor="lm")
    p.column(p.left, 1000, 280)
    items = ["Vision encoder: 61 ms per page", "Prefill: 64 ms for 903 prompt tokens",
             "Decode: 410 ms for 350 output tokens", "Dense pages are decode bound; slides are not"]
    listing = bullets(p, items, 44)
    p.column(1080, 1810, 300)
    p.bar_chart(["Vision", "Prefill", "Decode"], [61, 64, 410], 620, 28)
    p.draw.rectangle([0, p.h - 24, p.w, p.h], fill=NAVY)
    md = f"# {title}\n\n{listing}\n\n![](figure)\n"
    return p.img, ["title", "text", "figure", "slide"], md


POSTER = [
    ("Motivation", ["Document pages arrive in every size. The gundam mode of DeepSeek-OCR cuts each page into 640-pixel tiles and adds a 1024-pixel global view, so the number of visual tokens, and with it the prefill time, depends on the shape of the page as much as on its content."]),
    ("Method", ["We render synthetic pages of known content, run each one through the model several times after warm-up, and time the vision encoder, the prefill and every decode step with CUDA events. Model FLOPs utilisation compares the achieved rate with the peak of the device:"]),
]
POSTER_AFTER = "A poster of this size lands on the largest grid, nine tiles of 640 pixels, the most the rule allows."
POSTER_ROWS = [["Grid", "Tiles", "Image tokens"], ["1 × 1", "0", "273"], ["2 × 1", "2", "483"],
               ["2 × 2", "4", "693"], ["2 × 3", "6", "903"], ["3 × 3", "9", "1203"]]
POSTER_FINDINGS = [
    "Image tokens grow in steps, not smoothly: two pages of almost the same area can differ by five hundred tokens when they fall on different grids.",
    "Decode time depends on the length of the answer, so a slide with few words is dominated by the encoder and the prefill, and a dense page by decode.",
]
POSTER_SETUP = ["One GPU, bfloat16 weights, batch size one.", "Three warm-up requests, then ten timed runs per page.",
                "Gundam mode: 640-pixel tiles and a 1024-pixel global view."]
POSTER_FIG2 = "Figure 2. Decode time (s) against answer length; illustrative values."
POSTER_END = "Benchmarks of document models should report the page sizes they use. A small set of sample pages that spans many grids keeps comparisons honest at little cost."


def page_poster() -> Result:
    p = Page(4200, 4000, 160)
    title = "Profiling DeepSeek-OCR Across Page Shapes"
    sub = "A sample poster of 4200 × 4000 pixels, rendered for the llmprof test set"
    p.draw.rectangle([0, 0, p.w, 520], fill=NAVY)
    p.draw.text((p.w // 2, 200), title, font=font(SANS_BOLD, 130), fill="white", anchor="mm")
    p.draw.text((p.w // 2, 380), sub, font=font(SANS, 64), fill=(220, 228, 240), anchor="mm")
    colw, gap, top, text, head = (p.w - 2 * 160 - 2 * 140) // 3, 140, 680, 54, 84
    x = [160 + k * (colw + gap) for k in range(3)]
    md = [f"# {title}", sub]
    p.column(x[0], x[0] + colw, top)
    for h, paras in POSTER:
        p.heading(h, head)
        p.paragraph(paras[0], text)
        md += [f"## {h}", paras[0]]
    mfu = mfu_formula(p, 76, 1)
    p.paragraph(POSTER_AFTER, text)
    md += [mfu, POSTER_AFTER]
    p.heading("Setup", head)
    md += ["## Setup", bullets(p, POSTER_SETUP, text)]
    p.column(x[1], x[1] + colw, top)
    p.heading("Results", head)
    p.table(POSTER_ROWS, text, [0.3, 0.3, 0.4])
    p.bar_chart(["1×1", "2×1", "2×2", "2×3", "3×3"], [21, 35, 49, 63, 84], 1500, 44)
    cap = "Figure 1. Prefill time (ms) for each tile grid; illustrative values."
    p.caption(cap, 48)
    md += ["## Results", html_table(POSTER_ROWS), "![](figure)", cap]
    p.column(x[2], x[2] + colw, top)
    p.heading("Findings", head)
    md.append("## Findings")
    for t in POSTER_FINDINGS:
        p.paragraph(t, text)
        md.append(t)
    line_chart(p, [128, 256, 512, 1024], [("Decode", [1.4, 2.8, 5.6, 11.2], BAR_COLOURS[2])], 1150,
               44, 12, 3, "Answer length (tokens)", "Decode time (s)")
    p.caption(POSTER_FIG2, 48)
    md += ["![](figure)", POSTER_FIG2]
    p.heading("Conclusion", head)
    p.paragraph(POSTER_END, text)
    md += ["## Conclusion", POSTER_END]
    for xx in x[1:]:
        p.draw.line([(xx - gap // 2, top), (xx - gap // 2, p.h - 200)], fill=(200, 200, 200), width=3)
    p.draw.rectangle([0, p.h - 60, p.w, p.h], fill=NAVY)
    kinds = ["title", "text", "formula", "table", "figure", "chart", "caption", "large"]
    return p.img, kinds, "\n\n".join(md) + "\n"


MEMO_HEAD = ["To: Inference team", "From: Performance group", "Date: 5 March 2024",
             "Subject: Profiling schedule for the OCR service"]
MEMO_BODY = [
    "From next Monday the OCR service will be profiled every night on the sample pages that ship with the repository. Each run records the latency of the vision encoder, the prefill and the decode loop, together with the GPU clocks and temperature.",
    "Please do not change the driver or the clock settings of the benchmark machine without telling us first: a change of either makes the results of consecutive nights impossible to compare.",
    "Runs start at 02:00 and finish before 04:00, so the machine is free during working hours. Results are posted to the team page by 09:00 each morning, with a short note whenever a stage is more than five percent slower than the week before.",
    "The first report will be circulated on Friday. Questions and requests for additional pages are welcome.",
    "Performance group",
]


def scan(img: Image.Image, angle: float, seed: int) -> Image.Image:
    """Greyscale 'scan' of a page: slight rotation, grey uneven paper, dust specks and a dark
    scanner edge. Noise comes from random.Random(seed); the output is 8-bit greyscale with 32
    levels."""
    rng = random.Random(seed)
    w, h = img.size
    g = img.convert("L").rotate(angle, resample=Image.Resampling.BICUBIC, fillcolor=255)
    coarse = Image.new("L", (w // 90 + 2, h // 90 + 2))
    coarse.putdata([rng.randrange(216, 230) for _ in range(coarse.width * coarse.height)])
    paper = coarse.resize((w, h), Image.Resampling.BICUBIC)
    ink = g.point(lambda v: 40 + v * 215 // 255)
    out = ImageChops.multiply(ink, paper)
    d = ImageDraw.Draw(out)
    for _ in range(500):
        x, y, r = rng.randrange(w), rng.randrange(h), rng.choice((0, 0, 1, 1, 2))
        d.ellipse([x, y, x + r, y + r], fill=rng.randrange(70, 160))
    for k in range(26):  # scanner lid shadow along the left edge
        d.line([(k, 0), (k, h)], fill=30 + k * 7)
    return out.point(lambda v: v // 8 * 8)  # 32 grey levels keep the file small


def page_skewed_scan() -> Result:
    p = Page(1100, 1500, 110)
    p.block("MEMORANDUM", SERIF_BOLD, 40, leading=1.5)
    for line in MEMO_HEAD:
        p.block(line, SERIF, 24, leading=1.5, gap=0.1)
    p.y += 10
    p.draw.line([(p.left, p.y), (p.right, p.y)], fill=INK, width=2)
    p.y += 30
    for t in MEMO_BODY:
        p.block(t, SERIF, 24, leading=1.5, gap=0.9)
    md = "# MEMORANDUM\n\n" + "\n\n".join(MEMO_HEAD + MEMO_BODY) + "\n"
    return scan(p.img, 1.4, 18), ["title", "text", "skewed"], md


PEN = (25, 45, 120)  # blue ballpoint ink


def wobble(d: ImageDraw.ImageDraw, pts, rng: random.Random, amp=2.0, width=3, fill=PEN):
    """A pen stroke through pts: segments subdivided every ~10 px, smoothed random jitter."""
    dense = []
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        n = max(1, int(math.hypot(x1 - x0, y1 - y0) // 10))
        dense += [(x0 + (x1 - x0) * t / n, y0 + (y1 - y0) * t / n) for t in range(n)]
    dense.append(pts[-1])
    jit = [rng.uniform(-amp, amp) for _ in dense]
    jit = [(jit[max(k - 1, 0)] + jit[k] + jit[min(k + 1, len(jit) - 1)]) / 3 for k in range(len(jit))]
    d.line([(x + j, y - j) for (x, y), j in zip(dense, jit)], fill=fill, width=width, joint="curve")


def hand_text(p: Page, x: float, y: float, text: str, size: int, rng: random.Random,
              fill=PEN) -> float:
    """Oblique glyphs one by one, each with its own size, tilt, baseline shift and spacing (all
    from rng); returns the end x."""
    for k, ch in enumerate(text):
        f = font(SANS_OBLIQUE, size + rng.choice((-3, -2, -1, 0, 1, 2)))
        dy = rng.uniform(-2.5, 2.5) + 2.5 * math.sin(k * 0.35)
        angle = rng.uniform(-9, 9)
        if ch != " ":
            glyph = Image.new("L", (2 * size, 2 * size), 0)
            ImageDraw.Draw(glyph).text((size // 2, int(1.4 * size)), ch, font=f, fill=255, anchor="ls",
                                       stroke_width=1, stroke_fill=255)
            glyph = glyph.rotate(angle, resample=Image.Resampling.BICUBIC, center=(size // 2, int(1.4 * size)))
            p.img.paste(fill, (int(x - size // 2), int(y + dy - 1.4 * size)), glyph)
        x += p.draw.textlength(ch, font=f) * rng.uniform(0.92, 1.08) + (3 if ch == " " else 1)
    return x


HAND_ITEMS = ["profile every sample page in gundam mode", "compare decode time, base vs gundam",
              "check that the 3x3 poster fits in memory", "lock the GPU clocks first"]
HAND_TODO = "TODO: write the report by Friday"
HAND_NEXT = ["Next meeting: Tuesday 10:00", "bring the printed poster"]


def page_handwriting() -> Result:
    p = Page(1000, 1300, 60)
    rng = random.Random(20)
    d = p.draw
    line_y = [170 + 54 * k for k in range(21)]  # ruled lines; text sits 6 px above a line
    for y in line_y:
        d.line([(0, y), (p.w, y)], fill=(196, 212, 238), width=1)
    d.line([(110, 0), (110, p.h)], fill=(236, 168, 168), width=2)
    title = "Meeting notes 5/3"
    end = hand_text(p, 150, line_y[0] - 10, title, 48, rng)
    wobble(d, [(150, line_y[0] + 10), (end * 0.5 + 75, line_y[0] + 16), (end, line_y[0] + 8)], rng, amp=3)
    for k, item in enumerate(HAND_ITEMS):
        y = line_y[2 + 2 * k] - 6
        wobble(d, [(150, y - 12), (172, y - 13)], rng)
        hand_text(p, 190, y, item, 34, rng)
        if k < 2:  # ticks in the margin for the items already done
            wobble(d, [(62, y - 22), (74, y - 6), (98, y - 40)], rng, amp=1.2)
    y = line_y[11] - 6
    end = hand_text(p, 150, y, HAND_TODO, 36, rng)
    wobble(d, [(136, y - 46), (end + 14, y - 50), (end + 16, y + 16), (132, y + 14), (138, y - 48)],
           rng, amp=2.5)
    y = line_y[14] - 6
    end = hand_text(p, 150, y, HAND_NEXT[0], 36, rng)
    wobble(d, [(150, y + 10), (end, y + 7)], rng, amp=1.5)
    hand_text(p, 190, line_y[16] - 6, HAND_NEXT[1], 34, rng)
    star = [(820 + 60 * math.sin(a * 4 * math.pi / 5), line_y[16] - 60 * math.cos(a * 4 * math.pi / 5))
            for a in range(6)]  # a doodled star, not text
    wobble(d, star, rng, amp=2)
    md = (f"# {title}\n\n" + "\n".join(f"- {i}" for i in HAND_ITEMS) + f"\n\n{HAND_TODO}\n\n"
          + f"{HAND_NEXT[0]}\n\n{HAND_NEXT[1]}\n")
    return p.img, ["title", "text", "handwriting"], md



# (file name, builder, palette colours); greyscale pages ignore the colour count.
PAGES = [
    ("page-11-chart.png", page_chart, 64),
    ("page-13-photo.png", page_photo, 128),
    ("page-14-receipt.png", page_receipt, 64),
    ("page-15-slide.png", page_slide, 64),
    ("page-17-large-poster.png", page_poster, 64),
    ("page-18-skewed-scan.png", page_skewed_scan, 64),
    ("page-20-handwriting.png", page_handwriting, 64),
]
