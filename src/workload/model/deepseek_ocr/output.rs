//! Grounded output parser (spec §5): `<|ref|>label<|/ref|><|det|>[[x1,y1,x2,y2],…]<|/det|>text`
//! → elements with boxes mapped from 0..999 to original pixels (x·W/999, as the official demo).

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

/// Parses decoded model output for an image of `width`×`height` pixels.
pub fn parse_grounded(text: &str, width: u32, height: u32) -> ParsedOutput {
    let text = text.replace(EOS_TEXT, "");
    let (w, h) = (width as f64, height as f64);
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
            .map(|b| {
                [
                    b[0] as f64 / 999.0 * w,
                    b[1] as f64 / 999.0 * h,
                    b[2] as f64 / 999.0 * w,
                    b[3] as f64 / 999.0 * h,
                ]
            })
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
    fn plain_text_and_malformed_boxes() {
        let p = parse_grounded("just text", 10, 10);
        assert_eq!(p.preamble, "just text");
        assert!(p.elements.is_empty());
        let p = parse_grounded("<|ref|>x<|/ref|><|det|>[[1, 2, 3]]<|/det|>t", 10, 10);
        assert_eq!(p.elements[0].boxes_norm, Vec::<[i64; 4]>::new());
        assert_eq!(p.elements[0].text, "t");
    }
}
