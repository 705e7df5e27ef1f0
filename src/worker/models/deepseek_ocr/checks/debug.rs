//! Debug entry points for parity checks against the reference implementation (the lead wires
//! the CLI): decoder-only logits and SAM-only features from partial weight files.

use crate::models::common::kv_cache::KvCache;
use crate::models::common::optim::ModelOptim;
use crate::models::deepseek_ocr::checkpoint::weights::{Part, Weights};
use crate::models::deepseek_ocr::vision::sam::Sam;
use crate::models::deepseek_ocr::vision::sam_attention::SamOptim;
use anyhow::{ensure, Result};
use llmprof::model::deepseek_ocr::arch::ArchConfig;
use std::path::Path;
use tch::{Device, Kind, Tensor};

/// The config next to a checkpoint (`config.json` in its folder) or the released one.
pub fn config_for_checkpoint(weights: &Path) -> Result<ArchConfig> {
    let dir = if weights.is_dir() {
        Some(weights)
    } else {
        weights.parent()
    };
    match dir.map(|d| d.join("config.json")).filter(|p| p.is_file()) {
        Some(p) => ArchConfig::from_hf_config_json(&p),
        None => Ok(ArchConfig::deepseek_ocr()),
    }
}

/// Decoder-only run: fp32 logits [vocab] of the last prompt position (on the CPU) and
/// `greedy_n` greedy tokens. Uses CUDA when available. Only decoder tensors are loaded.
pub fn debug_logits(
    weights: &Path,
    ids: &[i64],
    dtype: Kind,
    greedy_n: usize,
) -> Result<(Tensor, Vec<i64>)> {
    let cfg = config_for_checkpoint(weights)?;
    debug_logits_with(
        &cfg,
        weights,
        ids,
        Device::cuda_if_available(),
        dtype,
        greedy_n,
    )
}

/// [`debug_logits`] with an explicit config and device.
pub fn debug_logits_with(
    cfg: &ArchConfig,
    weights: &Path,
    ids: &[i64],
    device: Device,
    dtype: Kind,
    greedy_n: usize,
) -> Result<(Tensor, Vec<i64>)> {
    ensure!(!ids.is_empty(), "debug_logits needs at least one token id");
    let w = Weights::load(weights, cfg, &[Part::Decoder], device, dtype)?;
    let dec = crate::models::deepseek_ocr::text::decoder::load(
        &w.root(),
        &cfg.decoder,
        &ModelOptim::default(),
    )?;
    drop(w);
    let mut cache = KvCache::new(
        crate::models::deepseek_ocr::text::decoder::kv_dims(&cfg.decoder),
        1,
        (ids.len() + greedy_n) as i64,
        device,
        dtype,
        false,
    )?;
    let x = dec.embed(
        &Tensor::f_from_slice(ids)?
            .f_view([1, -1])?
            .f_to_device(device)?,
    )?;
    let t = ids.len() as i64;
    let mut logits = dec.logits(&dec.forward(&x, &mut cache)?.f_select(1, t - 1)?)?; // (1, vocab)
    let prompt_logits = logits.f_view([-1])?.f_to_device(Device::Cpu)?;
    let mut out = Vec::new();
    for i in 0..greedy_n {
        let next = logits.f_argmax(-1, false)?; // (1)
        out.push(next.f_int64_value(&[0])?);
        if i + 1 == greedy_n {
            break;
        }
        let h = dec.forward(&dec.embed(&next.f_view([1, 1])?)?, &mut cache)?;
        logits = dec.logits(&h.f_select(1, 0)?)?;
    }
    Ok((prompt_logits, out))
}

/// SAM-only run: pixels [B,3,S,S] → fp32 features [B,1024,S/64,S/64] (on the pixels' device,
/// computed in the pixels' float dtype). Only SAM tensors are loaded.
pub fn debug_sam(weights: &Path, pixels: &Tensor) -> Result<Tensor> {
    let cfg = config_for_checkpoint(weights)?;
    debug_sam_with(&cfg, weights, pixels)
}

/// [`debug_sam`] with an explicit config.
pub fn debug_sam_with(cfg: &ArchConfig, weights: &Path, pixels: &Tensor) -> Result<Tensor> {
    let kind = pixels.kind();
    ensure!(
        matches!(
            kind,
            Kind::Float | Kind::BFloat16 | Kind::Half | Kind::Double
        ),
        "pixels must be a float tensor, got {kind:?}"
    );
    let w = Weights::load(weights, cfg, &[Part::Sam], pixels.device(), kind)?;
    let sam = Sam::load(
        &w.root().sub("model.sam_model"),
        &cfg.sam,
        SamOptim::default(),
    )?;
    Ok(sam.forward(pixels)?.f_to_kind(Kind::Float)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::common::test_util::temp_dir;
    use crate::models::deepseek_ocr::{DeepseekOcr, PromptRow};
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
        let (logits, toks) =
            debug_logits_with(&cfg, &dec_file, &ids, Device::Cpu, Kind::Float, 3).unwrap();
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
        let px = Tensor::rand([1, 3, 128, 128], (Kind::Float, Device::Cpu));
        let f = debug_sam_with(&cfg, &sam_file, &px).unwrap();
        assert_eq!(f.size(), vec![1, 32, 2, 2]);
    }
}
