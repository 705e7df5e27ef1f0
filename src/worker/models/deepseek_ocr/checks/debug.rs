//! Debug entry points for parity checks against the reference implementation (the lead wires
//! the CLI): decoder-only logits and SAM-only features from partial weight files.

use crate::engine::fast_path_check;
use crate::engine::graph_decode::StepPath;
use crate::models::deepseek_ocr::checkpoint::weights::{Part, Weights};
use crate::models::deepseek_ocr::DeepseekOcr;
use crate::models::deepseek_ocr::Switches;
use anyhow::{ensure, Result};
use llmprof::model::deepseek_ocr::arch::ArchConfig;
use std::path::Path;
use tch::{Device, Kind, Tensor};

/// The config next to a checkpoint (`config.json` in its folder) or the released one.
pub fn config_for_checkpoint(weights: &Path) -> Result<ArchConfig> {
    match crate::checkpoint::config_json_beside(weights) {
        Some(p) => ArchConfig::from_hf_config_json(&p),
        None => Ok(ArchConfig::deepseek_ocr()),
    }
}

/// Decoder-only run: fp32 logits [vocab] of the last prompt position (on the CPU) and
/// `greedy_n` greedy tokens, with the implementation choices `optim` and decode steps on `path`.
/// Uses CUDA when available. Only decoder tensors are loaded.
pub fn debug_logits(
    weights: &Path,
    ids: &[i64],
    dtype: Kind,
    greedy_n: usize,
    optim: &Switches,
    path: StepPath,
) -> Result<(Tensor, Vec<i64>)> {
    let cfg = config_for_checkpoint(weights)?;
    let device = Device::cuda_if_available();
    debug_logits_with(&cfg, weights, ids, device, dtype, greedy_n, optim, path)
}

/// [`debug_logits`] with an explicit config and device.
#[allow(clippy::too_many_arguments)]
pub fn debug_logits_with(
    cfg: &ArchConfig,
    weights: &Path,
    ids: &[i64],
    device: Device,
    dtype: Kind,
    greedy_n: usize,
    optim: &Switches,
    path: StepPath,
) -> Result<(Tensor, Vec<i64>)> {
    ensure!(!ids.is_empty(), "debug_logits needs at least one token id");
    let w = Weights::load(weights, cfg, &[Part::Decoder], device, dtype)?;
    let model = DeepseekOcr::load_with(w, cfg, optim)?;
    fast_path_check::greedy(&model, path, ids, greedy_n)
}

/// SAM-only run: pixels [B,3,S,S] → fp32 features [B,1024,S/64,S/64] (on the pixels' device,
/// computed in the pixels' float dtype) with SAM's switches in `optim`. Only SAM tensors are
/// loaded.
pub fn debug_sam(weights: &Path, pixels: &Tensor, optim: &Switches) -> Result<Tensor> {
    let cfg = config_for_checkpoint(weights)?;
    debug_sam_with(&cfg, weights, pixels, optim)
}

/// [`debug_sam`] with an explicit config.
pub fn debug_sam_with(
    cfg: &ArchConfig,
    weights: &Path,
    pixels: &Tensor,
    optim: &Switches,
) -> Result<Tensor> {
    let kind = pixels.kind();
    ensure!(
        matches!(
            kind,
            Kind::Float | Kind::BFloat16 | Kind::Half | Kind::Double
        ),
        "pixels must be a float tensor, got {kind:?}"
    );
    let w = Weights::load(weights, cfg, &[Part::Sam], pixels.device(), kind)?;
    let model = DeepseekOcr::load_with(w, cfg, optim)?;
    Ok(model
        .sam()?
        .forward(pixels, &llmprof::region::NoopObserver)?
        .f_to_kind(Kind::Float)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::deepseek_ocr::PromptRow;
    use crate::test_util::temp_dir;
    use llmprof::region::NoopObserver;

    #[test]
    fn partial_files_work_and_match_full_model() {
        let cfg = ArchConfig::tiny();
        let dir = temp_dir("debug");
        let dec_file = dir.join("decoder.safetensors");
        let sam_file = dir.join("sam.safetensors");
        Weights::synthetic(&cfg, &[Part::Decoder], 9, Device::Cpu, Kind::Float)
            .unwrap()
            .write_safetensors(&dec_file)
            .unwrap();
        Weights::synthetic(&cfg, &[Part::Sam], 9, Device::Cpu, Kind::Float)
            .unwrap()
            .write_safetensors(&sam_file)
            .unwrap();
        let ids = [0i64, 5, 6, 7];
        let eager = Switches::eager();
        let (logits, toks) = debug_logits_with(
            &cfg,
            &dec_file,
            &ids,
            Device::Cpu,
            Kind::Float,
            3,
            &eager,
            StepPath::Eager,
        )
        .unwrap();
        assert_eq!(logits.size(), vec![320]);
        assert_eq!(toks.len(), 3);
        let m = DeepseekOcr::from_checkpoint(
            &dec_file,
            &cfg,
            &[Part::Decoder],
            Device::Cpu,
            Kind::Float,
        )
        .unwrap();
        let l = m
            .prefill(
                &[PromptRow {
                    ids: &ids,
                    image: None,
                }],
                &mut m.new_cache(1, 8).unwrap(),
                &NoopObserver,
            )
            .unwrap();
        assert!((l.view([-1]) - &logits).abs().max().double_value(&[]) < 1e-5);
        assert_eq!(toks[0], l.argmax(-1, false).int64_value(&[0]));
        // Every switch on and fixed-shape steps over 1-slot windows (a new one each step): the same tokens, the
        // logits within fp32 rounding.
        let (fast_logits, fast_toks) = debug_logits_with(
            &cfg,
            &dec_file,
            &ids,
            Device::Cpu,
            Kind::Float,
            3,
            &Switches::fast(),
            StepPath::Graph { kv_bucket: 1 },
        )
        .unwrap();
        assert_eq!(fast_toks, toks);
        let rel =
            |a: &Tensor, b: &Tensor| (a - b).norm().double_value(&[]) / b.norm().double_value(&[]);
        assert!(rel(&fast_logits, &logits) < 1e-5);
        let px = Tensor::rand([1, 3, 128, 128], (Kind::Float, Device::Cpu));
        let f = debug_sam_with(&cfg, &sam_file, &px, &eager).unwrap();
        assert_eq!(f.size(), vec![1, 32, 2, 2]);
        let fast = debug_sam_with(&cfg, &sam_file, &px, &Switches::fast()).unwrap();
        let e = rel(&fast, &f);
        assert!(
            e < 1e-5 && e > 0.0,
            "the fast SAM is another formulation: {e}"
        );
    }
}
