//! `datasets/<dataset>/<variant>/metadata.yaml`: where a variant came from (parent, created,
//! transform, size, seed and the selection itself), written once by `make-variant` and read by
//! every run on it.
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// File name of a variant's provenance record.
pub const VARIANT_METADATA: &str = "metadata.yaml";

/// How the source data is laid out (and so how the variant is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// A folder of page images.
    Images,
    /// OmniDocBench: `OmniDocBench.json` + `images/`.
    Omnidocbench,
    /// One JSON object per line (prompt datasets).
    Jsonl,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantMetadata {
    /// The variant's name (its folder).
    pub name: String,
    /// The dataset it was made from (`dataset.name`).
    pub parent: String,
    /// The source data read (absolute path at creation).
    pub parent_root: String,
    /// When it was made (RFC 3339, UTC).
    pub created: String,
    /// What was done, in words.
    pub transform: String,
    pub size: VariantSize,
    /// Seed of the selection (ChaCha8 stream).
    pub seed: u64,
    pub selection: Selection,
    pub layout: Layout,
    /// What `dataset.root` becomes, relative to the variant folder (`.` or a file name).
    pub data: String,
    /// The llmprof version that made it.
    pub llmprof_version: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantSize {
    /// Items (pages or lines) in the variant.
    pub items: u64,
    /// Items the filtered source offered.
    pub of: u64,
    /// Bytes of the variant's data files.
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selection {
    pub num_samples: u64,
    /// The subset file the source was filtered by, if any.
    pub subset_file: Option<String>,
    /// The page kind the source was filtered by, if any.
    pub kind: Option<String>,
    /// The chosen items, in source order (file names relative to the image folder, or line
    /// numbers from 1 for JSONL).
    pub items: Vec<String>,
}

impl VariantMetadata {
    pub fn read(dir: &Path) -> Result<VariantMetadata> {
        let path = dir.join(VARIANT_METADATA);
        let text = crate::dataset::file_kind::read_to_string(&path)
            .with_context(|| format!("reading the variant metadata {}", path.display()))?;
        serde_yaml::from_str(&text).with_context(|| {
            format!(
                "{} is not a variant metadata file (made by `llmprof dataset make-variant`)",
                path.display()
            )
        })
    }

    pub fn to_yaml(&self) -> Result<String> {
        let body = serde_yaml::to_string(self).context("writing variant metadata")?;
        Ok(format!(
            "# Made by `llmprof dataset make-variant` (docs/datasets.md); do not edit by hand.\n{body}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::test_util::temp_dir;

    #[test]
    fn metadata_round_trips_through_the_file() {
        let m = VariantMetadata {
            name: "subset-2".into(),
            parent: "samples".into(),
            parent_root: "/r/datasets/samples".into(),
            created: "2026-01-02T03:04:05Z".into(),
            transform: "random subset".into(),
            size: VariantSize {
                items: 2,
                of: 6,
                bytes: 10,
            },
            seed: 7,
            selection: Selection {
                num_samples: 2,
                subset_file: None,
                kind: Some("table".into()),
                items: vec!["b.png".into(), "a: b.png".into()],
            },
            layout: Layout::Images,
            data: ".".into(),
            llmprof_version: "0.1.0".into(),
        };
        let d = temp_dir("variant-meta");
        std::fs::write(d.join(VARIANT_METADATA), m.to_yaml().unwrap()).unwrap();
        assert_eq!(VariantMetadata::read(&d).unwrap(), m);
    }
}
