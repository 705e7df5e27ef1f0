//! `llmprof debug vision`: the whole vision path (SAM, the encoder after it, projector and the
//! arrangement) from a weights file, for comparison with HF transformers' `get_image_features`.
//! Pixels come from a safetensors file (the reference's own preprocessing, so both encoders see
//! the same input) or from a page image through llmprof's preprocessing (which also reports the
//! tile grid and the image-token count the prompt will carry).
use crate::models::deepseek_ocr::preprocess::{normalise, preprocess, PreparedImage};
use crate::models::deepseek_ocr::Switches;
use crate::models::deepseek_ocr::{ArchConfig, DeepseekOcr, Part, Weights};
use anyhow::{bail, ensure, Context, Result};
use llmprof::model::deepseek_ocr::prompt::image_token_count;
use llmprof::model::deepseek_ocr::views::{Mode, PreprocessConfig, TileGrid};
use llmprof::region::NoopObserver;
use std::collections::HashMap;
use std::path::Path;
use tch::{Device, Kind, Tensor};

/// The architecture `name` names (`deepseek_ocr`, `deepseek_ocr2`, `tiny`, `tiny_ocr2`) and the
/// preprocessing of its released configuration.
pub fn arch_and_views(name: &str) -> Result<(ArchConfig, PreprocessConfig)> {
    let gundam = PreprocessConfig::from_mode(Mode::Gundam);
    let ocr2_views = PreprocessConfig::deepseek_ocr2();
    Ok(match name {
        "deepseek_ocr" => (ArchConfig::deepseek_ocr(), gundam),
        "deepseek_ocr2" => (ArchConfig::deepseek_ocr2(), ocr2_views),
        "tiny" => (ArchConfig::tiny(), gundam),
        "tiny_ocr2" => (ArchConfig::tiny_ocr2(), ocr2_views),
        other => bail!(
            "unknown vision architecture `{other}`: one of deepseek_ocr, deepseek_ocr2, tiny, tiny_ocr2"
        ),
    })
}

/// What one `debug vision` run produced.
pub struct VisionOutput {
    /// [image tokens, n_embed], fp32 on the CPU.
    pub embeddings: Tensor,
    pub grid: TileGrid,
    /// What the prompt carries for this image (equals the embedding rows).
    pub image_tokens: usize,
    /// The pixels encoded: `global` and, with tiles, `tiles`.
    pub pixels: Vec<(String, Tensor)>,
}

/// Reads `global` [1,3,S,S], optional `tiles` [n,3,s,s] and optional `grid` [cols, rows] (int;
/// default n×1) from a safetensors file.
fn pixels_from_file(path: &Path, pc: &PreprocessConfig) -> Result<PreparedImage> {
    let named: HashMap<String, Tensor> = Tensor::read_safetensors(path)
        .with_context(|| format!("reading {}", path.display()))?
        .into_iter()
        .collect();
    let global = named
        .get("global")
        .with_context(|| format!("{} has no `global` tensor [1,3,S,S]", path.display()))?
        .f_to_kind(Kind::Float)?;
    let tiles = named
        .get("tiles")
        .map(|t| t.f_to_kind(Kind::Float))
        .transpose()?;
    let n = tiles.as_ref().map_or(0, |t| t.size()[0]);
    let grid = match named.get("grid") {
        Some(g) => {
            let v = Vec::<i64>::try_from(&g.f_to_kind(Kind::Int64)?.f_view([-1])?)?;
            ensure!(
                v.len() == 2 && v[0] * v[1] == n.max(1),
                "`grid` {v:?} does not match {n} tiles"
            );
            TileGrid {
                cols: v[0] as u32,
                rows: v[1] as u32,
            }
        }
        None => TileGrid {
            cols: n.max(1) as u32,
            rows: 1,
        },
    };
    ensure!(
        global.size()[..2] == [1, 3] && global.size()[2] == pc.base_size as i64,
        "`global` must be [1,3,{0},{0}], got {1:?}",
        pc.base_size,
        global.size()
    );
    Ok(PreparedImage {
        global,
        tiles,
        grid,
        original_size: (0, 0),
    })
}

/// Runs the vision path of `arch` on `weights` (only SAM, encoder and projector are loaded).
pub fn debug_vision(
    arch: &str,
    weights: &Path,
    pixels: Option<&Path>,
    image: Option<&Path>,
    kind: Kind,
    optim: &Switches,
) -> Result<VisionOutput> {
    let (cfg, pc) = arch_and_views(arch)?;
    let prepared = match (pixels, image) {
        (Some(p), None) => pixels_from_file(p, &pc)?,
        (None, Some(i)) => preprocess(
            &crate::models::deepseek_ocr::preprocess::load_image(i)?,
            &pc,
        )?,
        _ => bail!("give exactly one of --pixels (a safetensors file) and --image (a page image)"),
    };
    let device = Device::cuda_if_available();
    let parts = [Part::Sam, Part::Encoder, Part::Projector];
    let w = Weights::load(weights, &cfg, &parts, device, kind)?;
    let m = DeepseekOcr::load_with(w, &cfg, optim)?;
    let embeddings = m
        .encode_images(&prepared, &NoopObserver)?
        .f_to_device(Device::Cpu)?
        .f_to_kind(Kind::Float)?;
    let image_tokens = image_token_count(cfg.token_layout(), &pc, prepared.grid);
    ensure!(
        embeddings.size()[0] == image_tokens as i64,
        "{} embedding rows for {image_tokens} image tokens",
        embeddings.size()[0]
    );
    let mut pix = vec![("global".to_string(), normalise(&prepared.global)?)];
    if let Some(t) = &prepared.tiles {
        pix.push(("tiles".to_string(), normalise(t)?));
    }
    Ok(VisionOutput {
        embeddings,
        grid: prepared.grid,
        image_tokens,
        pixels: pix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::temp_dir;

    #[test]
    fn pixels_file_and_weights_file_give_the_models_embeddings() {
        let cfg = ArchConfig::tiny_ocr2();
        let dir = temp_dir("debug-vision");
        let wfile = dir.join("vision.safetensors");
        let parts = [Part::Sam, Part::Encoder, Part::Projector];
        Weights::synthetic(&cfg, &parts, 5, Device::Cpu, Kind::Float)
            .unwrap()
            .write_safetensors(&wfile)
            .unwrap();
        // Views of the released sizes (1024 global, two 768 tiles) on the tiny architecture.
        tch::manual_seed(1);
        let global = Tensor::rand([1, 3, 1024, 1024], (Kind::Float, Device::Cpu));
        let tiles = Tensor::rand([2, 3, 768, 768], (Kind::Float, Device::Cpu));
        let pfile = dir.join("pixels.safetensors");
        Tensor::write_safetensors(&[("global", &global), ("tiles", &tiles)], &pfile).unwrap();
        let out = debug_vision(
            "tiny_ocr2",
            &wfile,
            Some(&pfile),
            None,
            Kind::Float,
            &Switches::fast(),
        )
        .unwrap();
        assert_eq!(out.image_tokens, 257 + 2 * 144);
        assert_eq!(out.embeddings.size(), vec![545, 64]);
        // The same file through the eager model: the fused SAM attention agrees with it.
        let w = Weights::load(&wfile, &cfg, &parts, Device::Cpu, Kind::Float).unwrap();
        let m = DeepseekOcr::load_with(w, &cfg, &Switches::eager()).unwrap();
        let want = m
            .encode_images(
                &PreparedImage {
                    global,
                    tiles: Some(tiles),
                    grid: TileGrid { cols: 2, rows: 1 },
                    original_size: (0, 0),
                },
                &NoopObserver,
            )
            .unwrap();
        let err = (&out.embeddings - &want).abs().max().double_value(&[]);
        assert!(err < 1e-5, "{err}");
        assert!(debug_vision(
            "nope",
            &wfile,
            Some(&pfile),
            None,
            Kind::Float,
            &Switches::fast()
        )
        .is_err());
    }
}
