"""Text-heavy sample pages for scripts/make_sample_pages.py (run that script, not this module).

Dense text, two columns, a table with merged cells, display formulas, Chinese text, a tiny page,
a pale low-contrast print, a wide table and a tall article. Each builder returns (image, content
kinds, ground-truth markdown); PAGES lists them with their file names and palette sizes.
"""
from __future__ import annotations

from PIL import Image

from sample_pages_layout import (
    CJK, INK, MONO, RULE, SANS, SANS_BOLD, SANS_OBLIQUE, SERIF, SERIF_BOLD, Page, Result, bullets,
    cjk_block, display, font, html_table, it, row, span_table,
)

DENSE = [
    ("2. Measuring Inference End to End", None),
    (None, "A profiler for language-model inference has to answer a simple question with some care: where does the time go between the moment a request arrives and the moment the last token leaves? The answer depends on the model, the batch, the hardware and the input itself. For a document model the input is a page image, and the page decides how many visual tokens the decoder must read before it writes its first word."),
    (None, "We therefore measure every request in three stages. The vision stage turns pixels into embeddings: a convolutional and windowed-attention encoder reads each tile at high resolution, a second encoder with global attention summarises it, and a small projector maps the result into the embedding space of the language model. The prefill stage runs the decoder once over the whole prompt, image tokens included, and fills the key-value cache. The decode stage then produces the output one token at a time, each step reading the cache and the weights from memory."),
    ("2.1 Timing", None),
    (None, "Each stage is bracketed by CUDA events recorded on the stream that runs it, so that the measured interval covers the kernels and not only the time the host spent launching them. The host clock is recorded alongside, because a gap between the two clocks reveals a launch-bound phase: a decoder step whose kernels finish faster than the CPU can enqueue them. Warm-up requests are run first and discarded, since the first call of each shape compiles kernels, grows the pools of the caching allocator and fills the instruction caches."),
    (None, "Latency alone hides the variance that matters in service. We keep every sample rather than a running mean and report the median together with the 90th and 99th percentiles, with linear interpolation between ranks. Inter-token latency is computed from every gap of every request, not from per-request means, so that a single slow step in a long answer is not averaged away."),
    ("2.2 Work and traffic", None),
    (None, "To tell whether a kernel is limited by arithmetic or by memory, we count its floating-point operations from the shapes of its operands and its bytes from the tensors it reads and writes. Their ratio, the arithmetic intensity, places the kernel on the roofline of the device. Prefill over a long prompt is usually compute bound; decode with a small batch almost always sits on the memory slope, which is why batching and quantised weights help it more than faster tensor cores."),
    (None, "Counting is not the same as measuring. Hardware counters collected by Nsight Compute give the achieved bandwidth and the fraction of peak throughput of each kernel, but they serialise the kernels and inflate the wall time, so counter runs are never mixed with timing runs. A separate pass under Nsight Systems records the timeline without replay, which shows the overlap between copies and compute and the idle gaps between launches."),
    ("2.3 Inputs", None),
    (None, "The input pages are part of the experiment. A page of dense text produces a long answer and stresses decode; a slide with a few words produces a short answer but, at a wide aspect ratio, a large tile grid and a long prompt. Tables and formulas change the vocabulary the decoder uses, and pages in other scripts change how many tokens each word costs. The sample set covers these cases with a handful of small files that ship with the repository."),
    (None, "All the pages are synthetic and drawn by a script, so the ground truth is known exactly and no licence question arises. They are not a benchmark of recognition accuracy: their purpose is to exercise the code paths that real documents exercise, with realistic sizes and realistic content, in a few seconds and without a download."),
]


def page_dense_text() -> Result:
    p = Page(1240, 1754, 110)  # A4 at 150 dpi
    md = []
    for k, (head, text) in enumerate(DENSE):
        if head:
            size = 36 if k == 0 else 25
            p.y += 0 if k == 0 else 10
            p.block(head, SERIF_BOLD, size, leading=1.3, gap=0.5)
            md.append(("# " if k == 0 else "## ") + head)
        else:
            p.block(text, SERIF, 20, leading=1.45, gap=0.7)
            md.append(text)
    return p.img, ["title", "text"], "\n\n".join(md) + "\n"


TWO_COL = [
    ("## 1. Introduction", "A page scanned at 150 dots per inch is about 1240 by 1754 pixels, several times the input size of a typical vision transformer. Shrinking it to fit loses the strokes that distinguish similar characters, while keeping it whole makes the attention cost grow with the square of the number of patches. Tiling sits between the two: the page is cut into crops of the native size of the encoder, each crop is encoded on its own, and a downscaled global view keeps the layout."),
    ("## 2. Choosing a grid", "The grid is chosen from the aspect ratio of the page. Every grid with between two and nine tiles is a candidate, and the one whose ratio of columns to rows is closest to that of the page wins. When two grids match equally well, the larger grid is taken only if the page has enough pixels to fill it; otherwise the page would be upsampled for no gain."),
    (None, "The rule is cheap and predictable, but it has sharp edges. Two square pages, one of 1300 and one of 1400 pixels a side, get a two-by-two and a three-by-three grid respectively, and the token count, and with it the prefill time, jumps from one grid to the next."),
    ("## 3. Cost", "Each tile adds one hundred visual tokens, plus a newline token at the end of every row of tokens, and the global view adds two hundred and seventy-three. A portrait page on a two-by-three grid therefore costs nine hundred and three tokens before the text of the prompt. For short answers the encoder and the prefill dominate; for dense pages the decode loop does."),
    (None, "Padding instead of tiling would keep one view per page, but a page of extreme aspect ratio would then spend most of its tokens on grey borders. Resizing without padding distorts the glyphs, which the decoder was not trained to read."),
    (None, "The encoder cost follows the same steps. Every tile passes through both vision encoders on its own, so a three-by-three grid does about nine times the work of a single crop before the global view is added, and the memory for activations grows in proportion."),
    ("## 4. Measurements", "We time the encoder, the prefill and the decode loop separately for each page of a small sample set, after three warm-up requests, and keep every sample. Pages on the same grid take the same encoder time to within a few percent, whatever they contain, while the decode time follows the length of the transcription."),
    ("## 5. Conclusion", "Tiling keeps small print legible at a predictable price. Profiling across many page shapes, rather than one, is the only way to see the steps in that price."),
]


def page_two_columns() -> Result:
    p = Page(1275, 1650, 90)  # US letter at 150 dpi
    title = "Tiling Strategies for High-Resolution Pages"
    p.block(title, SANS_BOLD, 38, leading=1.3, gap=0.6)
    abstract = ("Abstract. Vision encoders accept images of a fixed size, but document pages come in "
                "every size and shape. We compare three ways of feeding a page to an encoder, namely "
                "resizing, padding and tiling, and relate their cost to visual tokens and latency.")
    p.block(abstract, SANS_OBLIQUE, 20, fill=(60, 60, 60), gap=0.6)
    p.draw.line([(p.left, p.y), (p.right, p.y)], fill=RULE, width=1)
    top, bottom, gutter = p.y + 24, p.h - 90, 44
    mid = (p.left + p.right) // 2
    cols = [(p.left, mid - gutter // 2), (mid + gutter // 2, p.right)]
    fh, fp, lh = font(SANS_BOLD, 23), font(SANS, 20), 29
    lines = []  # (font, text, height); paragraphs flow from the left column into the right
    for head, text in TWO_COL:
        if head:
            lines.append((fh, head[3:], 44))
        wrapped = p.wrap(text, fp, cols[0][1] - cols[0][0])
        lines += [(fp, line, lh) for line in wrapped[:-1]] + [(fp, wrapped[-1], lh + 15)]
    # Balanced columns: the left one takes half the height (never a heading alone at its foot).
    half = min(bottom - top, sum(h for _, _, h in lines) / 2 + lh)
    col, y = 0, top
    for f, text, h in lines:
        if col == 0 and y - top + (h if f is fp else h + 2 * lh) > half:
            col, y = 1, top
        p.draw.text((cols[col][0], y), text, font=f, fill=INK)
        y += h
    md = [f"# {title}", abstract]
    for head, text in TWO_COL:
        md += [head, text] if head else [text]
    return p.img, ["title", "text", "two_columns"], "\n\n".join(md) + "\n"


def page_merged_table() -> Result:
    p = Page(1400, 1000, 80)
    title = "Table 3. Stage latency by mode and page type"
    p.title(title, 32)
    intro = ("Vision and decode costs for two resolution modes. Merged header cells group the columns "
             "of each stage; merged cells in the first column group the page types of each mode.")
    p.paragraph(intro, 21)
    data = [["Base", "Text", 38, 21, 352, 3810], ["Base", "Table", 38, 21, 268, 2950],
            ["Gundam", "Text", 71, 40, 361, 3990], ["Gundam", "Table", 71, 40, 274, 3120]]
    rows = [[("Mode", 2, 1), ("Page", 2, 1), ("Vision (ms)", 1, 2), ("Decode", 1, 2)],
            ["SAM", "CLIP", "Tokens", "Time (ms)"]]
    for k, (mode, page, *vals) in enumerate(data):
        rows.append(([(mode, 2, 1)] if k % 2 == 0 else []) + [page] + [str(v) for v in vals])
    means = [sum(d[i] for d in data) / len(data) for i in range(2, 6)]
    rows.append([("Mean", 1, 2)] + [f"{m:.1f}" for m in means])
    p.y += 10
    table = span_table(p, rows, 22, [0.16, 0.16, 0.17, 0.17, 0.17, 0.17], header_rows=2)
    note = "Illustrative values; the decode time covers the whole answer."
    p.caption(note, 18, centre=False)
    return p.img, ["title", "text", "table", "merged_table"], \
        f"# {title}\n\n{intro}\n\n{table}\n\n{note}\n"


FORMULAS = [
    ("Scaled dot-product attention, used by every layer of both encoders and of the decoder:",
     row("Attention(", it("Q"), ", ", it("K"), ", ", it("V"), ") = softmax",
         ("paren", ("frac", row(it("Q"), ("sup", it("K"), "⊤")), ("sqrt", ("sub", it("d"), it("k"))))),
         it("V")),
     "\\mathrm{Attention}(Q,K,V)=\\mathrm{softmax}\\left(\\frac{QK^{\\top}}{\\sqrt{d_{k}}}\\right)V"),
    ("The decoder is trained to minimise the negative log-likelihood of the reference text:",
     row(it("L"), " = −", ("frac", "1", it("N")), ("op", "∑", row(it("i"), " = 1"), it("N")),
         " log ", it("p"), "(", ("sub", it("y"), it("i")), " | ", ("sub", it("x"), it("i")), ")"),
     "L=-\\frac{1}{N}\\sum_{i=1}^{N}\\log p(y_{i}\\mid x_{i})"),
    ("A Gaussian integral, included for its limits and nested superscripts:",
     row(("int", "0", "∞"), ("sup", it("e"), row("−", ("sup", it("x"), "2"))), " ", it("dx"), " = ",
         ("frac", ("sqrt", it("π")), "2")),
     "\\int_{0}^{\\infty}e^{-x^{2}}\\,dx=\\frac{\\sqrt{\\pi}}{2}"),
    ("RMS normalisation, applied before each attention and feed-forward block of the decoder:",
     row("RMSNorm(", it("x"), ") = ",
         ("frac", it("x"), ("sqrt", row(("frac", "1", it("d")), ("op", "∑", row(it("i"), " = 1"), it("d")),
                                        ("subsup", it("x"), it("i"), "2"), " + ", it("ε")))),
         " ⊙ ", it("γ")),
     "\\mathrm{RMSNorm}(x)=\\frac{x}{\\sqrt{\\frac{1}{d}\\sum_{i=1}^{d}x_{i}^{2}+\\epsilon}}\\odot\\gamma"),
    ("Image tokens for a grid of c columns and r rows of tiles (h = 16, h₂ = 10):",
     row(it("n"), " = ", it("h"), "(", it("h"), " + 1) + 1 + ", it("r"), ("sub", it("h"), "2"), "(",
         it("c"), ("sub", it("h"), "2"), " + 1)"),
     "n=h(h+1)+1+rh_{2}(ch_{2}+1)"),
]


def page_formulas() -> Result:
    p = Page(1000, 1000, 70)
    title = "Appendix B. Formulas of the model"
    p.title(title, 30)
    md = [f"# {title}"]
    for k, (text, node, latex) in enumerate(FORMULAS, start=1):
        p.paragraph(text, 20)
        display(p, node, 30, f"({k})")
        md += [text, f"$$\n{latex} \\tag{{{k}}}\n$$"]
    return p.img, ["title", "text", "formula"], "\n\n".join(md) + "\n"


CN_PARAS = [
    ("# 文档解析中的视觉压缩", None),
    (None, "光学字符识别（OCR）把页面图像转换为可编辑的文本。DeepSeek-OCR 先用视觉编码器把一页文档压缩成少量视觉词元，再由语言模型逐个生成文字、表格和公式。"),
    ("## 一、分块策略", None),
    (None, "高达模式把大页面切成 640×640 像素的小块，另加一个 1024×1024 像素的全局视图。页面越大，小块越多，提示词也越长，预填充阶段的耗时随之增加。"),
    ("## 二、性能分析", None),
    (None, "本工具分别记录视觉编码、预填充和解码三个阶段的耗时。对于文字密集的页面，解码阶段通常占总时间的大部分；对于幻灯片一类文字较少的页面，视觉编码和预填充所占的比例更高。"),
    (None, "下表给出一页文档在基础模式下各阶段的耗时（示例数据）："),
]
CN_END = [
    ("## 三、小结", None),
    (None, "页面的尺寸和内容共同决定推理耗时。比较不同模型或不同硬件时，应当使用同一组测试页面，并记录每一页的尺寸和分块方式。"),
]


def page_chinese() -> Result:
    p = Page(900, 1270, 80)
    md = []

    def blocks(items):
        for head, text in items:
            if head:
                size = 38 if head.startswith("# ") else 28
                p.y += 0 if size == 38 else 8
                p.draw.text((p.left, p.y), head.lstrip("# "), font=font(CJK, size), fill=INK)
                p.y += int(size * 1.7)
                md.append(head)
            else:
                cjk_block(p, text, 24)
                md.append(text)
    blocks(CN_PARAS)
    rows = [["阶段", "耗时（毫秒）"], ["视觉编码", "61"], ["预填充", "64"], ["解码", "410"]]
    md.append(span_table(p, rows, 24, [0.5, 0.5], path=CJK, bold=CJK))
    note = "注：数据仅为示意，并非实测结果。"
    cjk_block(p, note, 22)
    md.append(note)
    blocks(CN_END)
    return p.img, ["title", "text", "table", "non_latin"], "\n\n".join(md) + "\n"


def page_tiny() -> Result:
    p = Page(600, 450, 40)
    p.title("Reminder", 30)
    t1 = "Warm up before timing: the first requests compile kernels and fill the caches."
    t2 = "Lock the GPU clocks, note the driver version, and keep every sample."
    p.paragraph(t1, 20)
    p.paragraph(t2, 20)
    p.draw.rectangle([8, 8, p.w - 9, p.h - 9], outline=RULE, width=2)
    return p.img, ["title", "text", "tiny"], f"# Reminder\n\n{t1}\n\n{t2}\n"


LOW = [
    ("# Archived Note: Clock Settings", None),
    (None, "This note was printed with a worn-out cartridge, so the text is pale grey on off-white paper. It checks whether the encoder still reads characters whose contrast with the background is low."),
    ("## Settings used", None),
    (None, "Graphics clock locked at 1755 MHz, memory clock at its default, power limit unchanged. Persistence mode was enabled before the first run and left on."),
    ("## Observations", None),
    (None, "With the clocks locked, the run-to-run variation of the decode time fell from about six percent to under one percent. Without locking, the first minutes of a run were faster than the rest, as the card warmed up and lowered its boost clock."),
    (None, "Record the settings with every result; a number without them cannot be reproduced."),
    ("## Follow-up", None),
    (None, "Repeat the measurement after every driver update and keep the old results: two runs can only be compared when a single setting changed between them."),
]


def page_low_contrast() -> Result:
    p = Page(700, 1400, 60)
    md = []
    for head, text in LOW:
        if head:
            p.block(head.lstrip("# "), SANS_BOLD, 32 if head.startswith("# ") else 26, leading=1.3, gap=0.6)
            md.append(head)
        else:
            p.block(text, SANS, 23, leading=1.5)
            md.append(text)
    ink, paper = (168, 166, 160), (247, 244, 236)  # contrast ratio about 2:1
    bands = [p.img.getchannel(c).point(lambda v, lo=ink[c], hi=paper[c]: lo + v * (hi - lo) // 255)
             for c in range(3)]
    return Image.merge("RGB", bands), ["title", "text", "low_contrast"], "\n\n".join(md) + "\n"


def page_wide_table() -> Result:
    p = Page(2400, 800, 70)
    title = "Table 5. GPU hours per month and team"
    p.title(title, 34)
    intro = "Hours on the shared inference cluster, rounded to whole hours; the last column and row are totals."
    p.paragraph(intro, 22)
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    teams = ["Vision", "Decoder", "Serving", "Data", "Evaluation"]
    grid = [[120 + 40 * t + (m * m * 7 + m * 13 + t * 31) % 97 for m in range(12)] for t in range(len(teams))]
    rows = [["Team"] + months + ["Total"]]
    rows += [[team] + [str(v) for v in vals] + [str(sum(vals))] for team, vals in zip(teams, grid)]
    col = [sum(vals[m] for vals in grid) for m in range(12)]
    rows.append(["Total"] + [str(v) for v in col] + [str(sum(col))])
    p.table(rows, 28, [0.1] + [0.066] * 12 + [0.108])
    note = "Evaluation includes the nightly profiling runs; Data includes rendering the sample pages."
    p.caption(note, 22, centre=False)
    return p.img, ["title", "text", "table"], f"# {title}\n\n{intro}\n\n{html_table(rows)}\n\n{note}\n"


ARTICLE_INTRO = "A profile is only useful if it is read with care. This page walks through the parts of a typical report, shows how to reproduce one number by hand, and lists the checks to make before trusting any of them."
ARTICLE_LIST = ["A timeline of every request, split into vision, prefill and decode.",
                "Latency percentiles (p50, p90, p99) for each stage.",
                "Token counts: image tokens, prompt tokens and generated tokens.",
                "The GPU clocks, temperature and power sampled during the run."]
ARTICLE_CODE_INTRO = "The same numbers can be approximated with a few lines of Python. Synchronise the device before reading the clock, or the measurement stops when the kernels are queued rather than when they finish:"
ARTICLE_CODE = """import time
import torch

times = []
for page in pages:
    torch.cuda.synchronize()
    start = time.perf_counter()
    text = model.infer(page)
    torch.cuda.synchronize()
    times.append(time.perf_counter() - start)"""
ARTICLE_STEPS = ["Lock the GPU clocks and record the driver version.", "Run at least three warm-up requests.",
                 "Keep the batch size and the page set fixed across runs.", "Save the raw samples, not only the means."]
ARTICLE_ROWS = [["Stage", "p50 (ms)", "p90 (ms)", "p99 (ms)"], ["Vision", "61", "66", "71"],
                ["Prefill", "64", "69", "80"], ["Decode", "410", "455", "512"]]
ARTICLE_TIMELINE = "On the timeline, look for gaps between kernels during decode. A gap means that the GPU is waiting for the host; fewer and larger kernels, or CUDA graphs, close it. Long copies between host and device before the first kernel usually mean that the page was decoded and resized on the CPU."
ARTICLE_END = [
    "The numbers in this table are illustrative. On a real run, compare the p99 with the p50 first: a large gap points at interference from other processes, at thermal throttling or at a few pages that produce much longer answers than the rest.",
    "Finally, keep the profile with the code and the settings that produced it. A latency figure that cannot be traced back to a commit, a driver and a clock setting is an anecdote, not a measurement.",
]


def page_tall_article() -> Result:
    p = Page(1300, 2600, 100)
    title = "Reading a Profile, Step by Step"
    p.title(title, 44)
    p.paragraph(ARTICLE_INTRO, 28)
    md = [f"# {title}", ARTICLE_INTRO]
    p.heading("What the report contains", 34)
    md += ["## What the report contains", bullets(p, ARTICLE_LIST, 28)]
    p.heading("Timing a loop by hand", 34)
    p.paragraph(ARTICLE_CODE_INTRO, 28)
    fm, lines = font(MONO, 25), ARTICLE_CODE.split("\n")
    p.draw.rectangle([p.left, p.y, p.right, p.y + 38 * len(lines) + 40], fill=(244, 244, 246),
                     outline=(200, 200, 205))
    for k, line in enumerate(lines):
        p.draw.text((p.left + 24, p.y + 20 + 38 * k), line, font=fm, fill=INK)
    p.y += 38 * len(lines) + 40 + 30
    md += ["## Timing a loop by hand", ARTICLE_CODE_INTRO, f"```python\n{ARTICLE_CODE}\n```"]
    p.heading("Checklist before a run", 34)
    steps = bullets(p, ARTICLE_STEPS, 28, marks=[f"{k}." for k in range(1, len(ARTICLE_STEPS) + 1)])
    md += ["## Checklist before a run", steps]
    p.heading("Typical numbers", 34)
    p.table(ARTICLE_ROWS, 28, [0.31, 0.23, 0.23, 0.23])
    md += ["## Typical numbers", html_table(ARTICLE_ROWS)]
    for t in ARTICLE_END[:1]:
        p.paragraph(t, 28)
        md.append(t)
    p.heading("Reading the timeline", 34)
    p.paragraph(ARTICLE_TIMELINE, 28)
    md += ["## Reading the timeline", ARTICLE_TIMELINE]
    for t in ARTICLE_END[1:]:
        p.paragraph(t, 28)
        md.append(t)
    return p.img, ["title", "text", "table", "list", "code"], "\n\n".join(md) + "\n"


# (file name, builder, palette colours)
PAGES = [
    ("page-07-dense-text.png", page_dense_text, 64),
    ("page-08-two-columns.png", page_two_columns, 64),
    ("page-09-merged-table.png", page_merged_table, 64),
    ("page-10-formulas.png", page_formulas, 64),
    ("page-12-chinese.png", page_chinese, 64),
    ("page-16-tiny.png", page_tiny, 64),
    ("page-19-low-contrast.png", page_low_contrast, 64),
    ("page-21-wide-table.png", page_wide_table, 64),
    ("page-22-tall-article.png", page_tall_article, 64),
]
