//! `llmprof infer`: direct inference over the dataset, no profilers and no warm-up. Per page it
//! writes a line of predictions.jsonl, `<name>.mmd` (markdown), `<name>.boxes.png` (layout boxes)
//! and crops of image elements under images/; README.md says what the files are (and if they are noise).
use super::inputs::Prepared;
use crate::models::deepseek_ocr::generate::{GenerateConfig, GenerateOutput};
use crate::models::deepseek_ocr::output::{box_to_px, parse_grounded, to_markdown};
use crate::models::deepseek_ocr::preprocess::load_image;
use super::setup::Workload;
use anyhow::{bail, Context, Result};
use image::RgbImage;
use llmprof::report::boxes::{self, LabeledBoxes};
use llmprof::spec::RunSpec;
use serde::Serialize;
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

pub const PREDICTIONS_FILE: &str = "predictions.jsonl";
pub const README_FILE: &str = "README.md";
/// Crops of `image` elements, linked from the markdown as `images/<name>_<k>.png`.
pub const IMAGES_DIR: &str = "images";

/// One line of predictions.jsonl.
#[derive(Debug, Serialize)]
struct Prediction<'a> {
    image: String,
    /// Stem of the per-page files (`<name>.mmd`, `<name>.boxes.png`).
    name: &'a str,
    prompt: &'a str,
    prompt_tokens: usize,
    output_tokens: usize,
    /// Decoded output, special tokens kept; ids the tokenizer lacks appear as `<id:N>`.
    text: &'a str,
    elements: Vec<PredictedElement>,
    synthetic_weights: bool,
    hit_eos: bool,
}

#[derive(Debug, Serialize)]
struct PredictedElement {
    label: String,
    text: String,
    /// `[x1, y1, x2, y2]` in pixels of the original (EXIF-transposed) image, truncated as the demo.
    boxes: Vec<[i64; 4]>,
}

/// What one page's generation produced, before it is written.
struct PageOutput<'a> {
    prepared: &'a Prepared,
    name: &'a str,
    text: String,
    output_tokens: usize,
    hit_eos: bool,
}

pub fn run(spec: &RunSpec, run_dir: &Path) -> Result<()> {
    let w = super::setup::build(spec)?;
    let pages = super::inputs::sample_pages(spec)?;
    write_readme(run_dir, spec, &w, pages.len())?;
    if w.synthetic {
        tracing::warn!(
            "synthetic weights: the predictions are noise (see {}/{README_FILE})",
            run_dir.display()
        );
    }
    let prepared = super::inputs::prepare_and_record(&w, spec, &pages, run_dir)?;
    write_predictions(spec, &w, &prepared, run_dir)
}

/// Generate for every prepared page (no profilers) and write predictions.jsonl and the per-page
/// files. Also used by stage 1 when `pipeline.direct_inference.enable` is set.
pub fn write_predictions(
    spec: &RunSpec,
    w: &super::setup::Workload,
    prepared: &[Prepared],
    run_dir: &Path,
) -> Result<()> {
    let names = unique_names(prepared.iter().map(|p| p.page.name.as_str()));
    let gen_cfg = super::stage1::generate_config(
        spec,
        &w.arch.tokens.ngram_exempt_token_ids,
        spec.infer.max_new_tokens as usize,
    );
    let font = match boxes::load_font(Path::new(boxes::LABEL_FONT)) {
        Ok(f) => Some(f),
        Err(e) => {
            tracing::warn!(
                "{e:#}: box images are drawn without labels (install fonts-dejavu-core)"
            );
            None
        }
    };
    let predictions_path = run_dir.join(PREDICTIONS_FILE);
    let mut predictions = std::fs::File::create(&predictions_path)
        .with_context(|| format!("creating {}", predictions_path.display()))?;
    let batch_size = (spec.runtime.batch_size as usize).max(1);
    let mut done = 0;
    for (chunk, chunk_names) in prepared.chunks(batch_size).zip(names.chunks(batch_size)) {
        let batch: Vec<&Prepared> = chunk.iter().collect();
        let out = generate_batch(w, &batch, &gen_cfg)
            .with_context(|| format!("generating for {}", chunk[0].page.path.display()))?;
        for (row, (p, name)) in chunk.iter().zip(chunk_names).enumerate() {
            let ids = out.tokens.get(row).with_context(|| {
                format!(
                    "generation returned no row {row} for {}",
                    p.page.path.display()
                )
            })?;
            let page = PageOutput {
                prepared: p,
                name,
                text: w.tokenizer.decode_lossy(ids),
                output_tokens: ids.len(),
                hit_eos: out.hit_eos.get(row).copied().unwrap_or(false),
            };
            let line = write_page(run_dir, spec, w, &page, font.as_ref())?;
            writeln!(predictions, "{line}")
                .with_context(|| format!("writing {}", predictions_path.display()))?;
            predictions
                .flush()
                .with_context(|| format!("writing {}", predictions_path.display()))?;
            done += 1;
            tracing::info!(page = %p.page.path.display(), output_tokens = page.output_tokens, hit_eos = page.hit_eos, "[{done}/{}] predicted", prepared.len());
        }
    }
    Ok(())
}

/// One batch through the model; a panic inside libtorch (e.g. CUDA out of memory in a
/// generated op) becomes an error instead of aborting the worker without a message.
fn generate_batch(
    w: &Workload,
    batch: &[&Prepared],
    cfg: &GenerateConfig,
) -> Result<GenerateOutput> {
    let run = || super::stage1::run_batch(w, batch, cfg, &llmprof::region::NoopObserver);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(result) => result,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "no message".into());
            bail!("the model panicked: {msg}")
        }
    }
}

/// Writes the files of one page and returns its JSON line.
fn write_page(
    run_dir: &Path,
    spec: &RunSpec,
    w: &Workload,
    page: &PageOutput<'_>,
    font: Option<&ab_glyph::FontVec>,
) -> Result<String> {
    let path = &page.prepared.page.path;
    let original = load_image(path)?;
    let elements = write_page_files(run_dir, page.name, &original, &page.text, font)
        .with_context(|| format!("writing the outputs of {}", path.display()))?;
    let prediction = Prediction {
        image: path.display().to_string(),
        name: page.name,
        prompt: &spec.infer.prompt,
        prompt_tokens: page.prepared.prompt_ids.len(),
        output_tokens: page.output_tokens,
        text: &page.text,
        elements,
        synthetic_weights: w.synthetic,
        hit_eos: page.hit_eos,
    };
    serde_json::to_string(&prediction)
        .with_context(|| format!("serialising the prediction for {}", path.display()))
}

/// `<name>.mmd`, the crops `images/<name>_<k>.png` and `<name>.boxes.png` for the decoded `text`
/// of a page whose original (EXIF-transposed RGB) image is `original`; returns the parsed elements.
fn write_page_files(
    run_dir: &Path,
    name: &str,
    original: &RgbImage,
    text: &str,
    font: Option<&ab_glyph::FontVec>,
) -> Result<Vec<PredictedElement>> {
    let (width, height) = original.dimensions();
    let link = |k: usize| format!("{IMAGES_DIR}/{name}_{k}.png");
    let md = to_markdown(text, link);
    let mmd = run_dir.join(format!("{name}.mmd"));
    std::fs::write(&mmd, &md.text).with_context(|| format!("writing {}", mmd.display()))?;

    for (k, b) in md.image_boxes.iter().enumerate() {
        let Some(crop) = boxes::crop(original, &box_to_px(b, width, height)) else {
            tracing::warn!(
                name,
                "image element {k} has an empty box {b:?}: no crop written"
            );
            continue;
        };
        let dir = run_dir.join(IMAGES_DIR);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let out = run_dir.join(link(k));
        crop.save(&out)
            .with_context(|| format!("writing {}", out.display()))?;
    }

    let parsed = parse_grounded(text, width, height);
    let labeled: Vec<LabeledBoxes<'_>> = parsed
        .elements
        .iter()
        .map(|e| LabeledBoxes {
            label: &e.label,
            boxes: &e.boxes_px,
        })
        .collect();
    let drawn = boxes::draw_boxes(original, &labeled, font);
    let png = run_dir.join(format!("{name}.boxes.png"));
    drawn
        .save(&png)
        .with_context(|| format!("writing {}", png.display()))?;

    Ok(parsed
        .elements
        .into_iter()
        .map(|e| PredictedElement {
            boxes: e.boxes_px.iter().map(|b| b.map(|v| v as i64)).collect(),
            label: e.label,
            text: e.text,
        })
        .collect())
}

/// File stems made unique in order: a second `page` becomes `page-1`, and so on.
fn unique_names<'a>(stems: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen = HashSet::new();
    stems
        .map(|stem| {
            let stem = if stem.is_empty() { "page" } else { stem };
            let mut name = stem.to_string();
            let mut n = 0;
            while !seen.insert(name.clone()) {
                n += 1;
                name = format!("{stem}-{n}");
            }
            name
        })
        .collect()
}

/// README.md of the run directory: what was run, the notes (synthetic weights, CPU fallback, ...)
/// and what each file holds. Written before generation, so a failed run still explains itself.
fn write_readme(run_dir: &Path, spec: &RunSpec, w: &Workload, pages: usize) -> Result<()> {
    let mut s = format!(
        "# llmprof infer\n\nModel `{}` on {:?} ({:?}), {pages} page(s), batch size {}, max_new_tokens {}, prompt `{}`.\n\n",
        w.model_name,
        w.device,
        w.kind,
        spec.runtime.batch_size,
        spec.infer.max_new_tokens,
        spec.infer.prompt.escape_debug()
    );
    if w.synthetic {
        s.push_str(&format!(
            "> **{}.** The weights are random (model.weights=synthetic): every prediction in this \
             directory (predictions.jsonl, *.mmd, *.boxes.png, images/) is noise. Use \
             model.weights=files with a DeepSeek-OCR checkpoint for real text.\n\n",
            llmprof::report::SYNTHETIC_NOTE
        ));
    }
    let notes: Vec<&String> = w
        .notes
        .iter()
        .filter(|n| n.as_str() != llmprof::report::SYNTHETIC_NOTE)
        .collect();
    if !notes.is_empty() {
        s.push_str("## Notes\n\n");
        for n in notes {
            s.push_str(&format!("- {n}\n"));
        }
        s.push('\n');
    }
    s.push_str(&format!(
        "## Files\n\n\
         - `{PREDICTIONS_FILE}`: one JSON object per page: image, prompt, prompt_tokens, output_tokens, text \
         (raw decoded output; ids the tokenizer lacks appear as `<id:N>`), elements (label, text, boxes in \
         pixels of the original image), synthetic_weights, hit_eos.\n\
         - `<name>.mmd`: the markdown, grounding tags removed as the official demo does.\n\
         - `<name>.boxes.png`: the page with each element's boxes, one colour per label.\n\
         - `{IMAGES_DIR}/<name>_<k>.png`: crops of `image` elements, linked from the markdown.\n"
    ));
    let path = run_dir.join(README_FILE);
    std::fs::write(&path, s).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_unique() {
        let names = unique_names(["a", "b", "a", "a", ""].into_iter());
        assert_eq!(names, ["a", "b", "a-1", "a-2", "page"]);
    }

    /// Shaped like a recorded grounding answer, for a 999×999 page (boxes are then in pixels).
    const RECORDED: &str = "<|ref|>title<|/ref|><|det|>[[100, 50, 900, 120]]<|/det|>\n# Report\n\n\
<|ref|>image<|/ref|><|det|>[[100, 200, 500, 600]]<|/det|>\n\n\
<|ref|>text<|/ref|><|det|>[[100, 700, 900, 900]]<|/det|>\nBody text.<｜end▁of▁sentence｜>";

    #[test]
    fn page_files_from_a_recorded_output() {
        let dir = std::env::temp_dir().join(format!("llmprof-infer-page-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let page = RgbImage::from_pixel(999, 999, image::Rgb([255, 255, 255]));
        let elements = write_page_files(&dir, "p", &page, RECORDED, None).unwrap();

        let labels: Vec<&str> = elements.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["title", "image", "text"]);
        assert_eq!(elements[0].boxes, vec![[100, 50, 900, 120]]);
        assert_eq!(elements[2].text, "Body text.");

        let md = std::fs::read_to_string(dir.join("p.mmd")).unwrap();
        assert_eq!(md, "\n# Report\n\n![](images/p_0.png)\n\n\n\nBody text.");
        let crop = image::open(dir.join("images/p_0.png")).unwrap();
        assert_eq!((crop.width(), crop.height()), (400, 400));

        let drawn = image::open(dir.join("p.boxes.png")).unwrap().to_rgb8();
        assert_eq!(drawn.dimensions(), (999, 999));
        assert_eq!(*drawn.get_pixel(100, 80), boxes::label_color("title"));
        assert_eq!(*drawn.get_pixel(950, 950), image::Rgb([255, 255, 255]));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
