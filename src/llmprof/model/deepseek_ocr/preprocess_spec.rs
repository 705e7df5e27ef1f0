//! `model.preprocess.*`: how a page becomes views (resolution mode, tile sizes, crop counts), as
//! typed config, resolved to the preprocessing's own parameters and checked against the
//! architecture.
use super::views::{Mode, PreprocessConfig};
use super::ArchConfig;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PreprocessSpec {
    pub mode: Mode,
    pub base_size: Option<u32>,
    pub image_size: Option<u32>,
    pub crop_mode: Option<bool>,
    pub min_crops: u32,
    pub max_crops: u32,
}

impl PreprocessSpec {
    /// The view sizes and tiling this preprocessing uses: the mode's, with the keys that are set
    /// overriding them.
    pub fn resolve(&self) -> PreprocessConfig {
        let mut cfg = PreprocessConfig::from_mode(self.mode);
        if let Some(b) = self.base_size {
            cfg.base_size = b;
        }
        if let Some(s) = self.image_size {
            cfg.image_size = s;
        }
        if let Some(c) = self.crop_mode {
            cfg.crop_mode = c;
        }
        cfg.min_crops = self.min_crops;
        cfg.max_crops = self.max_crops;
        cfg
    }

    /// The ranges of the crop counts, and that `arch` has what these views need (DeepSeek-OCR-2's
    /// query encoder has queries for some view sides only).
    pub fn check(&self, arch: &ArchConfig) -> Result<(), String> {
        crate::ranges::at_least("model.preprocess.min_crops", i64::from(self.min_crops), 1)?;
        if self.max_crops < self.min_crops {
            return Err(format!(
                "model.preprocess.max_crops={} is below min_crops={}: allowed range is [min_crops, 100]",
                self.max_crops, self.min_crops
            ));
        }
        let pc = self.resolve();
        let (sides, keys) = if pc.crop_mode {
            (
                vec![pc.base_size, pc.image_size],
                "model.preprocess.base_size (global view) and image_size (tiles)",
            )
        } else {
            (vec![pc.image_size], "model.preprocess.image_size")
        };
        for side in sides {
            if let Some(e) = arch.check_view_side(side) {
                return Err(format!("model.preprocess (mode {}): {e}\n  fix: set {keys} to sizes with queries, e.g. model.preprocess.mode=gundam model.preprocess.image_size=768 as conf/model/deepseek_ocr2.yaml does", self.mode.name()));
            }
        }
        Ok(())
    }
}
