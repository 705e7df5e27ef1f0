//! `llmprof infer`: direct inference over the dataset, no profilers and no warm-up. Per input it
//! writes a line of predictions.jsonl and, for document models, `<name>.mmd` (markdown),
//! `<name>.boxes.png` (layout boxes) and crops of image elements under images/; README.md says
//! what the files are (and if they are noise).
use super::inputs;
use crate::models::{with_model, ModelJob};
use anyhow::{bail, Context, Result};
use image::RgbImage;
use llmprof::dataset::{load_rgb_limited, ImageLimits};
use llmprof::model::{GenerateConfig, GenerateOutput, Model, ModelInfo, PageReading, RequestInfo};
use llmprof::report::artifacts::{
    IMAGES_DIR, INFER_README as README_FILE, PREDICTIONS_JSONL as PREDICTIONS_FILE,
};
use llmprof::report::boxes::{self, LabeledBoxes};
use llmprof::spec::RunSpec;
use serde::Serialize;
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

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

/// What one input's generation produced, before it is written.
struct PageOutput<'a> {
    request: RequestInfo,
    name: &'a str,
    text: String,
    output_tokens: usize,
    hit_eos: bool,
}

/// `llmprof infer` on the model `spec` names.
pub fn run(spec: &RunSpec, run_dir: &Path) -> Result<()> {
    with_model(spec, Infer { spec, run_dir })
}

struct Infer<'a> {
    spec: &'a RunSpec,
    run_dir: &'a Path,
}

impl ModelJob for Infer<'_> {
    type Output = ();
    fn run<M: Model>(self, model: &M) -> Result<()> {
        let (spec, run_dir) = (self.spec, self.run_dir);
        let (items, input_notes) = inputs::items(spec)?;
        for note in &input_notes {
            tracing::warn!("{note}");
        }
        write_readme(run_dir, spec, model.info(), items.len())?;
        if model.info().synthetic {
            tracing::warn!(
                "synthetic weights: the predictions are noise (see {}/{README_FILE})",
                run_dir.display()
            );
        }
        let prepared = inputs::prepare_and_record(model, spec, &items, run_dir, None)?;
        write_predictions(model, spec, &prepared, run_dir)
    }
}

/// Generate for every prepared input (no profilers) and write predictions.jsonl and the
/// per-input files. Also used by stage 1 when `pipeline.direct_inference.enable` is set.
pub fn write_predictions<M: Model>(
    model: &M,
    spec: &RunSpec,
    prepared: &[M::Request],
    run_dir: &Path,
) -> Result<()> {
    let infos: Vec<RequestInfo> = prepared.iter().map(|r| model.describe(r)).collect();
    let names = unique_names(infos.iter().map(|r| r.name.as_str()));
    let gen_cfg =
        spec.generate_config(model.ngram_exempt_ids(), spec.infer.max_new_tokens as usize);
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
    for ((chunk, chunk_infos), chunk_names) in prepared
        .chunks(batch_size)
        .zip(infos.chunks(batch_size))
        .zip(names.chunks(batch_size))
    {
        let batch: Vec<&M::Request> = chunk.iter().collect();
        let mut out = generate_batch(model, &batch, &gen_cfg.for_batch(chunk_infos))
            .with_context(|| format!("generating for {}", chunk_infos[0].path))?;
        out.cap_rows(chunk_infos);
        for (row, (info, name)) in chunk_infos.iter().zip(chunk_names).enumerate() {
            let ids = out
                .tokens
                .get(row)
                .with_context(|| format!("generation returned no row {row} for {}", info.path))?;
            let page = PageOutput {
                request: info.clone(),
                name,
                text: model.decode_text(ids),
                output_tokens: ids.len(),
                hit_eos: out.hit_eos.get(row).copied().unwrap_or(false),
            };
            let line = write_page(run_dir, spec, model, &page, font.as_ref())?;
            writeln!(predictions, "{line}")
                .with_context(|| format!("writing {}", predictions_path.display()))?;
            predictions
                .flush()
                .with_context(|| format!("writing {}", predictions_path.display()))?;
            done += 1;
            tracing::info!(page = %info.path, output_tokens = page.output_tokens, hit_eos = page.hit_eos, "[{done}/{}] predicted", prepared.len());
        }
    }
    Ok(())
}

/// One batch through the model; a panic inside libtorch (e.g. CUDA out of memory in a
/// generated op) becomes an error instead of aborting the worker without a message.
fn generate_batch<M: Model>(
    model: &M,
    batch: &[&M::Request],
    cfg: &GenerateConfig,
) -> Result<GenerateOutput> {
    let run = || model.generate(batch, cfg, &llmprof::region::NoopObserver);
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

/// Writes the files of one input and returns its JSON line.
fn write_page<M: Model>(
    run_dir: &Path,
    spec: &RunSpec,
    model: &M,
    page: &PageOutput<'_>,
    font: Option<&ab_glyph::FontVec>,
) -> Result<String> {
    let path = &page.request.path;
    let elements = match &page.request.image {
        Some(_) => {
            let original =
                load_rgb_limited(Path::new(path), &ImageLimits::from_spec(&spec.dataset))?;
            let (width, height) = original.dimensions();
            let link = |k: usize| image_link(page.name, k);
            match model.read_page(&page.text, width, height, &link) {
                Some(reading) => write_page_files(run_dir, page.name, &original, &reading, font)
                    .with_context(|| format!("writing the outputs of {path}"))?,
                None => Vec::new(),
            }
        }
        None => Vec::new(),
    };
    let prediction = Prediction {
        image: path.clone(),
        name: page.name,
        prompt: &spec.infer.prompt,
        prompt_tokens: page.request.prompt_tokens,
        output_tokens: page.output_tokens,
        text: &page.text,
        elements,
        synthetic_weights: model.info().synthetic,
        hit_eos: page.hit_eos,
    };
    serde_json::to_string(&prediction)
        .with_context(|| format!("serialising the prediction for {path}"))
}

/// Where the markdown of page `name` links its `k`-th image element.
fn image_link(name: &str, k: usize) -> String {
    format!("{IMAGES_DIR}/{name}_{k}.png")
}

/// `<name>.mmd`, the crops `images/<name>_<k>.png` and `<name>.boxes.png` for the `reading` of a
/// page whose original (EXIF-transposed RGB) image is `original`; returns its elements.
fn write_page_files(
    run_dir: &Path,
    name: &str,
    original: &RgbImage,
    reading: &PageReading,
    font: Option<&ab_glyph::FontVec>,
) -> Result<Vec<PredictedElement>> {
    let mmd = run_dir.join(format!("{name}.mmd"));
    std::fs::write(&mmd, &reading.markdown)
        .with_context(|| format!("writing {}", mmd.display()))?;

    for (k, b) in reading.image_boxes_px.iter().enumerate() {
        let Some(crop) = boxes::crop(original, b) else {
            tracing::warn!(
                name,
                "image element {k} has an empty box {b:?}: no crop written"
            );
            continue;
        };
        let dir = run_dir.join(IMAGES_DIR);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let out = run_dir.join(image_link(name, k));
        crop.save(&out)
            .with_context(|| format!("writing {}", out.display()))?;
    }

    let labeled: Vec<LabeledBoxes<'_>> = reading
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

    Ok(reading
        .elements
        .iter()
        .map(|e| PredictedElement {
            boxes: e.boxes_px.iter().map(|b| b.map(|v| v as i64)).collect(),
            label: e.label.clone(),
            text: e.text.clone(),
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
fn write_readme(run_dir: &Path, spec: &RunSpec, w: &ModelInfo, pages: usize) -> Result<()> {
    let mut s = format!(
        "# llmprof infer\n\nModel `{}` on {} ({}), {pages} page(s), batch size {}, max_new_tokens {}, prompt `{}`.\n\n",
        w.name,
        w.device,
        w.dtype,
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
        let link = |k: usize| image_link("p", k);
        let reading = llmprof::model::deepseek_ocr::output::read_page(RECORDED, 999, 999, &link);
        let elements = write_page_files(&dir, "p", &page, &reading, None).unwrap();

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
