//! Grounded output parser (docs/deepseek-ocr.md §5): `<|ref|>label<|/ref|><|det|>[[x1,y1,x2,y2],…]<|/det|>text`
//! → elements with boxes mapped from 0..999 to original pixels (x·W/999, as the official demo),
//! and the official post-processing of that text into markdown (`result.mmd`).

use serde::Serialize;

pub const REF_OPEN: &str = "<|ref|>";
pub const REF_CLOSE: &str = "<|/ref|>";
pub const DET_OPEN: &str = "<|det|>";
pub const DET_CLOSE: &str = "<|/det|>";
pub const EOS_TEXT: &str = "<｜end▁of▁sentence｜>";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Element {
    pub label: String,
    /// Boxes as written by the model, normalised to 0..999.
    pub boxes_norm: Vec<[i64; 4]>,
    /// Boxes in original-image pixels: v/999·W (x) and v/999·H (y). The demo truncates to int.
    pub boxes_px: Vec<[f64; 4]>,
    /// Content after `<|/det|>` up to the next `<|ref|>` (trimmed).
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParsedOutput {
    /// Text before the first element (trimmed); the whole text without grounding.
    pub preamble: String,
    pub elements: Vec<Element>,
}

/// Extracts `[a, b, c, d]` groups of four integers from a det payload (a Python list literal);
/// groups that are not four integers are skipped.
fn parse_boxes(payload: &str) -> Vec<[i64; 4]> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut cur = String::new();
    for ch in payload.chars() {
        match ch {
            '[' => {
                depth += 1;
                cur.clear();
            }
            ']' => {
                if depth > 0 {
                    let nums: Vec<Option<i64>> = cur
                        .split(',')
                        .map(|s| s.trim().parse::<i64>().ok())
                        .collect();
                    if nums.len() == 4 && nums.iter().all(Option::is_some) {
                        let v: Vec<i64> = nums.into_iter().flatten().collect();
                        out.push([v[0], v[1], v[2], v[3]]);
                    }
                    cur.clear();
                    depth -= 1;
                }
            }
            c => cur.push(c),
        }
    }
    out
}

/// A box normalised to 0..999 → pixels of a `width`×`height` image (v/999·W, v/999·H).
pub fn box_to_px(b: &[i64; 4], width: u32, height: u32) -> [f64; 4] {
    let (w, h) = (f64::from(width), f64::from(height));
    [
        b[0] as f64 / 999.0 * w,
        b[1] as f64 / 999.0 * h,
        b[2] as f64 / 999.0 * w,
        b[3] as f64 / 999.0 * h,
    ]
}

/// Markdown made from a grounded output, and the boxes its image links point to.
#[derive(Debug, Clone, PartialEq)]
pub struct Markdown {
    pub text: String,
    /// Boxes (0..999) of the `image` elements, in link order: link `k` shows crop `k`.
    pub image_boxes: Vec<[i64; 4]>,
}

/// The official post-processing (HF `infer()`, vLLM `run_dpsk_ocr_image.py`), docs/deepseek-ocr.md §5: EOS removed;
/// each `<|ref|>label<|/ref|><|det|>…<|/det|>` removed, keeping the element's text after it; an
/// `image` element becomes `![](<image_link(k)>)\n`; when any non-image element exists,
/// `\coloneqq` → `:=` and `\eqqcolon` → `=:`. Differences, both for outputs the demo mangles:
/// the demo numbers links per element but crops per box, here both count boxes (one link per box);
/// a grounding tag cut off by `max_new_tokens` at the end is dropped, and stray markers removed.
pub fn to_markdown(raw: &str, image_link: impl Fn(usize) -> String) -> Markdown {
    let text = raw.replace(EOS_TEXT, "");
    let mut out = String::with_capacity(text.len());
    let mut image_boxes = Vec::new();
    let mut any_other = false;
    let mut last = 0;
    for caps in grounding_regex().captures_iter(&text) {
        let whole = caps.get(0).expect("group 0 is the whole match");
        out.push_str(&text[last..whole.start()]);
        last = whole.end();
        if &caps[1] == "image" {
            for b in parse_boxes(&caps[2]) {
                out.push_str(&format!("![]({})\n", image_link(image_boxes.len())));
                image_boxes.push(b);
            }
        } else {
            any_other = true;
        }
    }
    let tail = &text[last..];
    out.push_str(&tail[..truncated_tag_start(tail).unwrap_or(tail.len())]);
    for marker in [REF_OPEN, REF_CLOSE, DET_OPEN, DET_CLOSE] {
        out = out.replace(marker, "");
    }
    if any_other {
        out = out.replace("\\coloneqq", ":=").replace("\\eqqcolon", "=:");
    }
    Markdown {
        text: out,
        image_boxes,
    }
}

/// Where a grounding tag that generation stopped inside starts (`<|ref|>label` without its
/// `<|/ref|>`, or `<|ref|>…<|/ref|>` then nothing or an unclosed `<|det|>`), if the text ends in one.
fn truncated_tag_start(tail: &str) -> Option<usize> {
    let open = tail.rfind(REF_OPEN)?;
    let after = &tail[open + REF_OPEN.len()..];
    let truncated = match after.find(REF_CLOSE) {
        None => true,
        Some(i) => {
            let rest = &after[i + REF_CLOSE.len()..];
            rest.is_empty() || (rest.starts_with(DET_OPEN) && !rest.contains(DET_CLOSE))
        }
    };
    truncated.then_some(open)
}

/// The demo's `re_match` pattern: `(<\|ref\|>(.*?)<\|/ref\|><\|det\|>(.*?)<\|/det\|>)`, DOTALL.
fn grounding_regex() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(r"(?s)<\|ref\|>(.*?)<\|/ref\|><\|det\|>(.*?)<\|/det\|>")
            .expect("the pattern is valid")
    })
}

/// Parses decoded model output for an image of `width`×`height` pixels.
pub fn parse_grounded(text: &str, width: u32, height: u32) -> ParsedOutput {
    let text = text.replace(EOS_TEXT, "");
    let mut elements = Vec::new();
    let first = text.find(REF_OPEN).unwrap_or(text.len());
    let preamble = text[..first].trim().to_string();
    let mut rest = &text[first..];
    while let Some(r) = rest.strip_prefix(REF_OPEN) {
        let Some(end_label) = r.find(REF_CLOSE) else {
            break;
        };
        let label = r[..end_label].to_string();
        let mut after = &r[end_label + REF_CLOSE.len()..];
        let mut boxes_norm = Vec::new();
        if let Some(d) = after.strip_prefix(DET_OPEN) {
            if let Some(end_det) = d.find(DET_CLOSE) {
                boxes_norm = parse_boxes(&d[..end_det]);
                after = &d[end_det + DET_CLOSE.len()..];
            }
        }
        let next = after.find(REF_OPEN).unwrap_or(after.len());
        let boxes_px = boxes_norm
            .iter()
            .map(|b| box_to_px(b, width, height))
            .collect();
        elements.push(Element {
            label,
            boxes_norm,
            boxes_px,
            text: after[..next].trim().to_string(),
        });
        rest = &after[next..];
    }
    ParsedOutput { preamble, elements }
}

/// The page reading of a DeepSeek-OCR output `text` for a `width`×`height` page: the markdown
/// (image elements linked through `image_link(k)`), the linked images' boxes and every layout
/// element, boxes in pixels.
pub fn read_page(
    text: &str,
    width: u32,
    height: u32,
    image_link: &dyn Fn(usize) -> String,
) -> crate::model::PageReading {
    let md = to_markdown(text, image_link);
    crate::model::PageReading {
        markdown: md.text,
        image_boxes_px: md
            .image_boxes
            .iter()
            .map(|b| box_to_px(b, width, height))
            .collect(),
        elements: parse_grounded(text, width, height)
            .elements
            .into_iter()
            .map(|e| crate::model::LayoutElement {
                label: e.label,
                text: e.text,
                boxes_px: e.boxes_px,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped like a recorded DeepSeek-OCR grounding-markdown answer.
    const RECORDED: &str = "<|ref|>title<|/ref|><|det|>[[62, 45, 937, 88]]<|/det|>\n# Annual Report 2023\n\n\
<|ref|>text<|/ref|><|det|>[[62, 110, 937, 240]]<|/det|>\nRevenue grew by 12% year over year.\n\n\
<|ref|>image<|/ref|><|det|>[[100, 300, 500, 600], [520, 300, 900, 600]]<|/det|>\n\n\
<|ref|>table<|/ref|><|det|>[[62, 650, 937, 900]]<|/det|>\n<table><tr><td>Q1</td><td>10</td></tr></table><｜end▁of▁sentence｜>";

    #[test]
    fn parses_recorded_output() {
        let p = parse_grounded(RECORDED, 999 * 2, 999);
        assert_eq!(p.preamble, "");
        let labels: Vec<_> = p.elements.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["title", "text", "image", "table"]);
        assert_eq!(p.elements[0].text, "# Annual Report 2023");
        assert_eq!(p.elements[0].boxes_norm, vec![[62, 45, 937, 88]]);
        assert_eq!(p.elements[0].boxes_px, vec![[124.0, 45.0, 1874.0, 88.0]]);
        assert_eq!(p.elements[2].boxes_norm.len(), 2);
        assert_eq!(p.elements[2].text, "");
        assert_eq!(
            p.elements[3].text,
            "<table><tr><td>Q1</td><td>10</td></tr></table>"
        );
    }

    #[test]
    fn markdown_from_recorded_output() {
        let md = to_markdown(RECORDED, |k| format!("images/page_{k}.png"));
        assert_eq!(
            md.text,
            "\n# Annual Report 2023\n\n\nRevenue grew by 12% year over year.\n\n\
![](images/page_0.png)\n![](images/page_1.png)\n\n\n\n\
<table><tr><td>Q1</td><td>10</td></tr></table>"
        );
        assert_eq!(
            md.image_boxes,
            vec![[100, 300, 500, 600], [520, 300, 900, 600]]
        );
        for marker in [REF_OPEN, DET_OPEN, "<|/", EOS_TEXT, "[[62"] {
            assert!(!md.text.contains(marker), "{marker} left in {}", md.text);
        }
    }

    #[test]
    fn markdown_edge_cases() {
        let link = |k: usize| format!("i{k}");
        // Truncated by max_new_tokens inside a tag.
        let md = to_markdown(
            "intro <|ref|>text<|/ref|><|det|>[[1,2,3,4]]<|/det|>body <|ref|>tab",
            link,
        );
        assert_eq!(md.text, "intro body ");
        let md = to_markdown("a<|ref|>text<|/ref|><|det|>[[1, 2", link);
        assert_eq!(md.text, "a");
        assert_eq!(to_markdown("a<|ref|>text<|/ref|>", link).text, "a");
        // A ref without det mid-text (Locate prompts) keeps its words; only the markers go.
        assert_eq!(
            to_markdown("Found <|ref|>the cat<|/ref|> here", link).text,
            "Found the cat here"
        );
        // coloneqq only when a non-image element exists, as the demo.
        let md = to_markdown(
            "<|ref|>equation<|/ref|><|det|>[[1,2,3,4]]<|/det|>$a \\coloneqq b$",
            link,
        );
        assert_eq!(md.text, "$a := b$");
        assert_eq!(
            to_markdown("$a \\coloneqq b$", link).text,
            "$a \\coloneqq b$"
        );
        // Noise from random weights: no grounding at all, passes through.
        assert_eq!(to_markdown("x<id:299>y", link).text, "x<id:299>y");
        assert!(
            to_markdown("<|ref|>image<|/ref|><|det|>[[1,2]]<|/det|>", link)
                .image_boxes
                .is_empty()
        );
    }

    #[test]
    fn plain_text_and_malformed_boxes() {
        let p = parse_grounded("just text", 10, 10);
        assert_eq!(p.preamble, "just text");
        assert!(p.elements.is_empty());
        let p = parse_grounded("<|ref|>x<|/ref|><|det|>[[1, 2, 3]]<|/det|>t", 10, 10);
        assert_eq!(p.elements[0].boxes_norm, Vec::<[i64; 4]>::new());
        assert_eq!(p.elements[0].text, "t");
    }
}
