//! `dataset.*` and `dataset.sampling.*` as typed structs (field names are the YAML keys); the spec
//! holds them (`crate::spec::DatasetSpec`).
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    pub name: String,
    pub root: String,
    /// A text file listing image paths (relative to `root`), one per line.
    pub subset_filelist: Option<String>,
    /// A variant under `datasets/<name>/<variant>/` (docs/datasets.md); null: the source data.
    /// The front end points `root` at the variant's data before the worker starts.
    #[serde(default)]
    pub variant: Option<String>,
    pub sampling: SamplingSpec,
    /// Largest page image decoded, width × height, checked from the header (default: PIL's
    /// DecompressionBombError size; absent in configs written before the key existed).
    #[serde(default = "super::default_max_image_pixels")]
    pub max_image_pixels: u64,
    /// Largest decoded size of one page image in bytes (native buffer + its RGB copy).
    #[serde(default = "super::default_max_image_bytes")]
    pub max_image_bytes: u64,
    // Text datasets (dataset=random_tokens, dataset=prompts); absent for image ones.
    // `random_tokens` means what vLLM's random dataset means: lengths drawn uniformly from
    // [len·(1 − range_ratio), len·(1 + range_ratio)] (floor, ceil), random token ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_len: Option<u32>,
    /// random_tokens: mean output length; prompts: cap per request (null: infer.max_new_tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_len: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_prompts: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// prompts: the JSONL file (one object with a `prompt` string per line), relative to root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingSpec {
    pub num_epochs: u32,
    /// null: every image once per epoch.
    pub num_samples_per_epoch: Option<u32>,
    pub randomize: bool,
    pub seed: u64,
}
