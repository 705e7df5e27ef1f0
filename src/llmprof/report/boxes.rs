//! Layout boxes drawn on a page (`<name>.boxes.png` of `llmprof infer`) and crops of image
//! elements, as the official DeepSeek-OCR demo's `draw_bounding_boxes`: a translucent fill, an
//! outline (thicker for `title`) and the label above the box. Pure `image` + `ab_glyph`, no tch.
use ab_glyph::{point, Font, FontVec, PxScale, ScaleFont};
use anyhow::{Context, Result};
use image::{Rgb, RgbImage};
use std::path::Path;

/// Label font: DejaVu Sans, installed by bootstrap.sh (Debian package fonts-dejavu-core).
pub const LABEL_FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Fill opacity inside a box: the demo's overlay alpha, 20 of 255.
const FILL_ALPHA: f32 = 20.0 / 255.0;

/// One layout element to draw: its label and its boxes in pixels of the page, `[x1, y1, x2, y2]`.
#[derive(Debug, Clone, Copy)]
pub struct LabeledBoxes<'a> {
    pub label: &'a str,
    pub boxes: &'a [[f64; 4]],
}

/// Reads a TrueType/OpenType font for the labels.
pub fn load_font(path: &Path) -> Result<FontVec> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("reading the label font {}", path.display()))?;
    FontVec::try_from_vec(bytes)
        .with_context(|| format!("{} is not a TrueType/OpenType font", path.display()))
}

/// A stable colour per label (FNV-1a hash into a palette of well-separated, saturated colours).
pub fn label_color(label: &str) -> Rgb<u8> {
    const PALETTE: [[u8; 3]; 10] = [
        [230, 25, 75],
        [60, 140, 60],
        [0, 110, 200],
        [245, 130, 48],
        [145, 30, 180],
        [0, 150, 150],
        [200, 40, 200],
        [120, 110, 0],
        [128, 0, 0],
        [0, 0, 128],
    ];
    let hash = label.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    Rgb(PALETTE[(hash % PALETTE.len() as u64) as usize])
}

/// Integer pixel rectangle `(x1, y1, x2, y2)`, inclusive, clamped to a `w`×`h` image; None when
/// the box lies outside it. Coordinates are truncated as the demo's `int(x / 999 * W)`.
pub fn clamp_box(b: &[f64; 4], w: u32, h: u32) -> Option<(u32, u32, u32, u32)> {
    if w == 0 || h == 0 || b.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let (x1, x2) = (b[0].min(b[2]), b[0].max(b[2]));
    let (y1, y2) = (b[1].min(b[3]), b[1].max(b[3]));
    if x2 < 0.0 || y2 < 0.0 || x1 >= f64::from(w) || y1 >= f64::from(h) {
        return None;
    }
    let cx = |v: f64| (v.max(0.0) as u32).min(w - 1);
    let cy = |v: f64| (v.max(0.0) as u32).min(h - 1);
    Some((cx(x1), cy(y1), cx(x2), cy(y2)))
}

fn blend(px: &mut Rgb<u8>, color: Rgb<u8>, alpha: f32) {
    let a = alpha.clamp(0.0, 1.0);
    for (p, c) in px.0.iter_mut().zip(color.0) {
        *p = (f32::from(*p) * (1.0 - a) + f32::from(c) * a).round() as u8;
    }
}

fn fill_rect(
    img: &mut RgbImage,
    (x1, y1, x2, y2): (u32, u32, u32, u32),
    color: Rgb<u8>,
    alpha: f32,
) {
    for y in y1..=y2.min(img.height().saturating_sub(1)) {
        for x in x1..=x2.min(img.width().saturating_sub(1)) {
            blend(img.get_pixel_mut(x, y), color, alpha);
        }
    }
}

fn outline_rect(
    img: &mut RgbImage,
    (x1, y1, x2, y2): (u32, u32, u32, u32),
    color: Rgb<u8>,
    width: u32,
) {
    for t in 0..width {
        let (ax, ay) = (x1 + t, y1 + t);
        let (bx, by) = (x2.saturating_sub(t), y2.saturating_sub(t));
        if ax > bx || ay > by {
            break;
        }
        for x in ax..=bx {
            img.put_pixel(x, ay, color);
            img.put_pixel(x, by, color);
        }
        for y in ay..=by {
            img.put_pixel(ax, y, color);
            img.put_pixel(bx, y, color);
        }
    }
}

/// Label height in pixels for a page: readable on both a 64-px test page and a 3000-px scan.
fn label_px(w: u32, h: u32) -> f32 {
    (w.min(h) as f32 / 60.0).clamp(10.0, 40.0)
}

/// Width and height of `text` at `scale` (advance sum, ascent − descent).
fn text_size(font: &FontVec, scale: PxScale, text: &str) -> (f32, f32) {
    let f = font.as_scaled(scale);
    let width = text.chars().map(|c| f.h_advance(f.glyph_id(c))).sum();
    (width, f.ascent() - f.descent())
}

/// Draws `text` with its top-left corner at (x, y), alpha-blended by glyph coverage.
fn draw_text(
    img: &mut RgbImage,
    font: &FontVec,
    scale: PxScale,
    (x, y): (f32, f32),
    text: &str,
    color: Rgb<u8>,
) {
    let f = font.as_scaled(scale);
    let mut caret = x;
    let mut prev = None;
    for c in text.chars() {
        let id = f.glyph_id(c);
        if let Some(p) = prev {
            caret += f.kern(p, id);
        }
        let glyph = id.with_scale_and_position(scale, point(caret, y + f.ascent()));
        caret += f.h_advance(id);
        prev = Some(id);
        let Some(outlined) = font.outline_glyph(glyph) else {
            continue;
        };
        let bounds = outlined.px_bounds();
        outlined.draw(|gx, gy, coverage| {
            let px = bounds.min.x as i64 + i64::from(gx);
            let py = bounds.min.y as i64 + i64::from(gy);
            if px >= 0
                && py >= 0
                && (px as u64) < u64::from(img.width())
                && (py as u64) < u64::from(img.height())
            {
                blend(img.get_pixel_mut(px as u32, py as u32), color, coverage);
            }
        });
    }
}

/// A copy of `page` with every element's boxes drawn; labels only when a font is given.
/// The output has the size of `page`; pixels away from all boxes (and labels) are unchanged.
pub fn draw_boxes(
    page: &RgbImage,
    elements: &[LabeledBoxes<'_>],
    font: Option<&FontVec>,
) -> RgbImage {
    let mut img = page.clone();
    let (w, h) = img.dimensions();
    // Fills first (the demo pastes one overlay), then outlines and labels on top.
    for e in elements {
        for r in e.boxes.iter().filter_map(|b| clamp_box(b, w, h)) {
            fill_rect(&mut img, r, label_color(e.label), FILL_ALPHA);
        }
    }
    let scale = PxScale::from(label_px(w, h));
    for e in elements {
        let color = label_color(e.label);
        let width = if e.label == "title" { 4 } else { 2 };
        for r in e.boxes.iter().filter_map(|b| clamp_box(b, w, h)) {
            outline_rect(&mut img, r, color, width);
            let Some(font) = font else { continue };
            let (tw, th) = text_size(font, scale, e.label);
            let ty = r.1.saturating_sub(th.ceil() as u32);
            let bg = (
                r.0,
                ty,
                (r.0 + tw.ceil() as u32).min(w - 1),
                (ty + th.ceil() as u32).min(h - 1),
            );
            fill_rect(&mut img, bg, Rgb([255, 255, 255]), 0.85);
            draw_text(
                &mut img,
                font,
                scale,
                (r.0 as f32, ty as f32),
                e.label,
                color,
            );
        }
    }
    img
}

/// The part of `page` inside `b` (pixels), or None when the box is empty or outside the page.
pub fn crop(page: &RgbImage, b: &[f64; 4]) -> Option<RgbImage> {
    let (x1, y1, x2, y2) = clamp_box(b, page.width(), page.height())?;
    (x2 > x1 && y2 > y1)
        .then(|| image::imageops::crop_imm(page, x1, y1, x2 - x1, y2 - y1).to_image())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> RgbImage {
        RgbImage::from_pixel(200, 120, Rgb([250, 250, 250]))
    }

    fn changed(a: &RgbImage, b: &RgbImage, x: u32, y: u32) -> bool {
        a.get_pixel(x, y) != b.get_pixel(x, y)
    }

    #[test]
    fn boxes_change_pixels_on_and_inside_only() {
        let src = page();
        let boxes = [[20.0, 40.0, 80.0, 90.0]];
        let out = draw_boxes(
            &src,
            &[LabeledBoxes {
                label: "text",
                boxes: &boxes,
            }],
            None,
        );
        assert_eq!(out.dimensions(), src.dimensions());
        assert_eq!(
            *out.get_pixel(20, 60),
            label_color("text"),
            "outline on the left edge"
        );
        assert_eq!(
            *out.get_pixel(50, 90),
            label_color("text"),
            "outline on the bottom edge"
        );
        assert!(changed(&src, &out, 50, 60), "fill inside");
        assert_ne!(
            *out.get_pixel(50, 60),
            label_color("text"),
            "the fill is translucent"
        );
        for (x, y) in [(0, 0), (199, 119), (150, 60), (50, 110), (10, 10)] {
            assert!(!changed(&src, &out, x, y), "({x},{y}) is far from the box");
        }
    }

    #[test]
    fn labels_are_drawn_with_a_font() {
        let Ok(font) = load_font(Path::new(LABEL_FONT)) else {
            panic!("{LABEL_FONT} missing: install fonts-dejavu-core (bootstrap.sh does)");
        };
        let src = page();
        let boxes = [[20.0, 60.0, 180.0, 110.0]];
        let el = [LabeledBoxes {
            label: "title",
            boxes: &boxes,
        }];
        let without = draw_boxes(&src, &el, None);
        let with = draw_boxes(&src, &el, Some(&font));
        let label_area = (20..120).flat_map(|x| (40..60).map(move |y| (x, y)));
        let dark = |p: &Rgb<u8>| p.0.iter().any(|&c| c < 150);
        let inked = label_area
            .filter(|&(x, y)| dark(with.get_pixel(x, y)) && !dark(without.get_pixel(x, y)))
            .count();
        assert!(inked > 20, "glyph pixels above the box: {inked}");
        assert!(!changed(&src, &with, 190, 5));
        assert_eq!(
            *with.get_pixel(21, 85),
            label_color("title"),
            "title outline is 4 px wide"
        );
    }

    #[test]
    fn out_of_page_and_reversed_boxes() {
        assert_eq!(clamp_box(&[250.0, 10.0, 300.0, 20.0], 200, 120), None);
        assert_eq!(
            clamp_box(&[80.0, 90.0, 20.0, 40.0], 200, 120),
            Some((20, 40, 80, 90))
        );
        assert_eq!(
            clamp_box(&[-5.0, -5.0, 500.0, 500.0], 200, 120),
            Some((0, 0, 199, 119))
        );
        assert_eq!(clamp_box(&[f64::NAN, 0.0, 1.0, 1.0], 200, 120), None);
        let src = page();
        let out = draw_boxes(
            &src,
            &[LabeledBoxes {
                label: "x",
                boxes: &[[-5.0, -5.0, 500.0, 500.0]],
            }],
            None,
        );
        assert_eq!(out.dimensions(), src.dimensions());
    }

    #[test]
    fn crops_inside_the_page() {
        let mut src = page();
        src.put_pixel(30, 50, Rgb([1, 2, 3]));
        let c = crop(&src, &[30.0, 50.0, 70.0, 60.0]).expect("inside");
        assert_eq!(c.dimensions(), (40, 10));
        assert_eq!(*c.get_pixel(0, 0), Rgb([1, 2, 3]));
        assert!(
            crop(&src, &[30.0, 50.0, 30.0, 60.0]).is_none(),
            "zero width"
        );
        assert!(crop(&src, &[300.0, 50.0, 330.0, 60.0]).is_none(), "outside");
    }

    #[test]
    fn colours_are_stable_and_differ() {
        assert_eq!(label_color("table"), label_color("table"));
        let labels = ["title", "text", "image", "table", "image_caption"];
        let distinct: std::collections::HashSet<_> =
            labels.iter().map(|l| label_color(l).0).collect();
        assert!(distinct.len() >= 4, "{distinct:?}");
    }
}
