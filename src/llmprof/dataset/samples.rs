//! `datasets/samples/metadata.yaml`: per sample page its size, the kinds of content drawn and a
//! ground-truth markdown (written by scripts/make_sample_pages.py).
use anyhow::{Context, Result};
use serde::Deserialize;
use std::path::Path;

/// File name of the metadata inside the samples folder.
pub const SAMPLES_METADATA: &str = "metadata.yaml";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SamplesMetadata {
    /// The font the pages were drawn with: recorded for people, not read by llmprof.
    #[serde(rename = "font")]
    _font: String,
    pages: Vec<SamplePage>,
}

/// One generated page.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplePage {
    /// File name inside the samples folder.
    pub file: String,
    pub width: u32,
    pub height: u32,
    /// Content drawn: title, text, table, formula, figure, caption, chart, photo, …
    pub kinds: Vec<String>,
    /// DeepSeek-OCR's gundam crop grid for the page, [cols, rows] ([1, 1]: no crops); recorded
    /// by make_sample_pages.py, absent in hand-written metadata.
    #[serde(default)]
    pub gundam_grid: Option<[u32; 2]>,
    /// `<image>` tokens the page becomes in gundam mode (DeepSeek-OCR's layout).
    #[serde(default)]
    pub image_tokens: Option<usize>,
    /// What a perfect OCR would write (tables as HTML, formulas as LaTeX).
    pub markdown: String,
}

/// Reads `<dir>/metadata.yaml`.
pub fn read_sample_metadata(dir: &Path) -> Result<Vec<SamplePage>> {
    let path = dir.join(SAMPLES_METADATA);
    let text = crate::dataset::file_kind::read_to_string(&path)
        .with_context(|| format!("reading {}", path.display()))?;
    let meta: SamplesMetadata =
        serde_yaml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok(meta.pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped sample set: at least 20 pages (OmniDocBench's dev-20 size), each as its
    /// metadata says, ≤ 2 MB together, of varied content on at least 8 distinct gundam grids
    /// including no crops and the maximum crop count.
    #[test]
    fn shipped_pages_match_their_metadata() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/samples");
        let pages = read_sample_metadata(&dir).unwrap();
        assert!(pages.len() >= 20, "{} pages", pages.len());
        let listed = super::super::list_images(&dir, None).unwrap();
        assert_eq!(listed.len(), pages.len(), "every listed image has metadata");
        let mut total = 0;
        for (page, path) in pages.iter().zip(&listed) {
            assert_eq!(path.file_name().unwrap().to_str().unwrap(), page.file);
            let (w, h) = image::image_dimensions(path).unwrap();
            assert_eq!((w, h), (page.width, page.height), "{}", page.file);
            total += std::fs::metadata(path).unwrap().len();
            assert!(page.markdown.starts_with("# "), "{}", page.file);
        }
        assert!(total <= 2 * 1024 * 1024, "the pages take {total} bytes");
        for kind in [
            "text",
            "two_columns",
            "merged_table",
            "formula",
            "chart",
            "photo",
            "caption",
            "non_latin",
            "receipt",
            "slide",
            "tiny",
            "large",
            "skewed",
            "low_contrast",
            "handwriting",
        ] {
            assert!(
                pages.iter().any(|p| p.kinds.iter().any(|k| k == kind)),
                "no page with {kind}"
            );
        }
    }
}
