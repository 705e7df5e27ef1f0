//! `llmprof debug fast-path`: the fast-path checks for the architecture `--arch` names — the
//! decoder's (`engine::fast_path_check`) for every family, and the vision encoder's for
//! DeepSeek-OCR (`deepseek_ocr::checks::vision_fast_path`) on synthetic pages of its crop mode.
use crate::engine::fast_path_check::{self, VariantCheck, BF16_ERROR_GROWTH_MAX};
use crate::models::deepseek_ocr::checks::vision_fast_path::{
    self, VisionCheck, FP32_REL_ERROR_MAX,
};
use crate::models::deepseek_ocr::preprocess::{self, PreparedImage};
use crate::models::deepseek_ocr::ArchConfig;
use crate::models::dense;
use anyhow::{bail, Result};
use llmprof::model::deepseek_ocr::views::{Mode, PreprocessConfig};
use serde::Serialize;
use tch::Device;

/// What one `debug fast-path` run checked.
#[derive(Debug, Serialize)]
pub struct FastPathReport {
    pub decoder: Vec<VariantCheck>,
    /// Empty for models without a vision encoder.
    pub vision: Vec<VisionCheck>,
}

impl FastPathReport {
    /// Both tables, markdown.
    pub fn tables(&self) -> String {
        let mut table = String::from("Against fp32 eager, teacher-forced with its tokens:\n\n| variant | dtype | steps | token mismatches | rel L2 logit error | eager bf16 error | graphs | result |\n|---|---|---:|---:|---:|---:|---:|---|\n");
        for c in &self.decoder {
            table.push_str(&format!(
                "| {} | {} | {} | {} | {:.2e} | {} | {} | {} |\n",
                c.variant,
                c.dtype,
                c.steps,
                c.token_mismatches,
                c.rel_logit_error,
                c.eager_bf16_rel_logit_error
                    .map_or("—".to_string(), |e| format!("{e:.2e}")),
                c.graphs_captured,
                if c.passed { "pass" } else { "FAIL" }
            ));
        }
        if !self.vision.is_empty() {
            table.push('\n');
            table.push_str(&vision_fast_path::table(&self.vision));
        }
        table
    }

    /// An error naming every failed variant and the bounds, or `Ok` when all passed.
    pub fn verdict(&self) -> Result<()> {
        let failed: Vec<String> = self
            .decoder
            .iter()
            .filter(|c| !c.passed)
            .map(|c| format!("{} ({})", c.variant, c.dtype))
            .chain(
                self.vision
                    .iter()
                    .filter(|c| !c.passed)
                    .map(|c| format!("vision {} ({})", c.variant, c.dtype)),
            )
            .collect();
        if !failed.is_empty() {
            bail!(
                "fast path differs from eager: {} (decoder fp32 needs identical greedy tokens, vision fp32 a relative error of at most {FP32_REL_ERROR_MAX:e}; a bf16 variant's error against fp32 may be at most {BF16_ERROR_GROWTH_MAX}× the eager bf16 error)",
                failed.join(", ")
            );
        }
        Ok(())
    }
}

/// Synthetic pages for the vision check in `cfg`'s crop mode: one tall enough for a 2×3 crop
/// grid and one small enough for no crops, both with structure (stripes and a gradient) so
/// that attention patterns are not uniform.
fn pages(pc: &PreprocessConfig) -> Result<Vec<PreparedImage>> {
    let tile = pc.image_size;
    [(2 * tile, 3 * tile, 1u32), (tile * 3 / 4, tile / 2, 2)]
        .into_iter()
        .map(|(w, h, k)| {
            let img = image::RgbImage::from_fn(w, h, |x, y| {
                let stripe = if (y / 7 + k) % 3 == 0 { 0 } else { 200 };
                image::Rgb([stripe, ((x * 255) / w) as u8, ((y * 5 * k) % 256) as u8])
            });
            preprocess::preprocess(&img, pc)
        })
        .collect()
}

/// The architectures `debug fast-path --arch` takes: DeepSeek-OCR's and every dense preset.
pub fn parse_arch(name: &str) -> Result<String, String> {
    let mut known = vec!["full", "tiny", "deepseek_ocr2", "deepseek_ocr2_tiny"];
    known.extend(dense::presets::names());
    if name.ends_with(".json") && std::path::Path::new(name).is_file() {
        return Ok(name.to_string()); // a checkpoint's config.json: its dense decoder
    }
    match known.contains(&name) {
        true => Ok(name.to_string()),
        false => Err(format!(
            "one of {}, or the path of a config.json of a model_type the dense family reads",
            known.join(", ")
        )),
    }
}

/// Runs the checks for `arch`: a dense preset name, `full` or `tiny` for DeepSeek-OCR,
/// `deepseek_ocr2` or `deepseek_ocr2_tiny` for DeepSeek-OCR-2 (the same decoder; its query
/// encoder follows `fused_projections`, `sdpa` and `fused_rms_norm`, checked in `all`).
pub fn run(
    arch: &str,
    steps: usize,
    prompt_lens: &[usize],
    kv_bucket: i64,
    seed: i64,
) -> Result<FastPathReport> {
    let device = Device::cuda_if_available();
    let from_config = arch
        .ends_with(".json")
        .then(|| llmprof::model::dense::DenseArch::from_hf_config_json(std::path::Path::new(arch)));
    if let Some(a) = from_config.or_else(|| dense::presets::arch(arch)) {
        let a = a?;
        let prompts = fast_path_check::prompts(prompt_lens, a.vocab_size, 7, &[]);
        let subject = dense::fast_path::Subject {
            arch: a,
            device,
            seed,
        };
        return Ok(FastPathReport {
            decoder: fast_path_check::check(&subject, &prompts, steps, kv_bucket)?,
            vision: Vec::new(),
        });
    }
    let tiny_views = PreprocessConfig {
        base_size: 128,
        image_size: 64,
        crop_mode: true,
        min_crops: 2,
        max_crops: 6,
    };
    let (cfg, pc) = match arch {
        "tiny" => (ArchConfig::tiny(), tiny_views),
        "deepseek_ocr2_tiny" => (ArchConfig::tiny_ocr2(), tiny_views),
        "deepseek_ocr2" => (
            ArchConfig::deepseek_ocr2(),
            PreprocessConfig::deepseek_ocr2(),
        ),
        _ => (
            ArchConfig::deepseek_ocr(),
            PreprocessConfig::from_mode(Mode::Gundam),
        ),
    };
    let prompts = fast_path_check::prompts(
        prompt_lens,
        cfg.decoder.vocab_size,
        7,
        &[cfg.tokens.image_token_id],
    );
    let subject = crate::models::deepseek_ocr::checks::fast_path::Subject {
        cfg: cfg.clone(),
        device,
        seed,
    };
    let decoder = fast_path_check::check(&subject, &prompts, steps, kv_bucket)?;
    let vision = vision_fast_path::check(&cfg, device, seed, &pages(&pc)?)?;
    Ok(FastPathReport { decoder, vision })
}
