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
    /// Content drawn: title, text, table, formula, figure, caption.
    pub kinds: Vec<String>,
    /// What a perfect OCR would write (tables as HTML, formulas as LaTeX).
    pub markdown: String,
}

/// Reads `<dir>/metadata.yaml`.
pub fn read_sample_metadata(dir: &Path) -> Result<Vec<SamplePage>> {
    let path = dir.join(SAMPLES_METADATA);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let meta: SamplesMetadata =
        serde_yaml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok(meta.pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_pages_match_their_metadata() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/samples");
        let pages = read_sample_metadata(&dir).unwrap();
        assert_eq!(pages.len(), 6);
        let listed = super::super::list_images(&dir, None).unwrap();
        for (page, path) in pages.iter().zip(&listed) {
            assert_eq!(path.file_name().unwrap().to_str().unwrap(), page.file);
            let (w, h) = image::image_dimensions(path).unwrap();
            assert_eq!((w, h), (page.width, page.height), "{}", page.file);
            assert!(
                std::fs::metadata(path).unwrap().len() < 150 * 1024,
                "{} is over 150 KB",
                page.file
            );
            assert!(page.markdown.starts_with("# "), "{}", page.file);
        }
        // Shapes vary so gundam tiling varies: portrait, landscape and a 2:1 page.
        assert!(pages.iter().any(|p| p.height > p.width));
        assert!(pages.iter().any(|p| p.width > p.height));
        assert!(pages.iter().any(|p| p.width >= 2 * p.height));
        for kind in ["text", "table", "formula", "figure", "caption"] {
            assert!(
                pages.iter().any(|p| p.kinds.iter().any(|k| k == kind)),
                "no page with {kind}"
            );
        }
    }
}
