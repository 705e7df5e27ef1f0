//! The fast-path check of the vision encoder: seeded SAM, CLIP and projector weights, the
//! page embeddings of every vision switch alone and all together against the eager encoder
//! (each page alone, reference SAM attention). The measures follow the decoder's check
//! (`engine::fast_path_check`):
//! - fp32: relative L2 error of the embeddings at most [`FP32_REL_ERROR_MAX`];
//! - bf16: a variant's error against fp32 eager at most `BF16_ERROR_GROWTH_MAX` times eager
//!   bf16's own error.
use crate::engine::fast_path_check::BF16_ERROR_GROWTH_MAX;
use crate::models::deepseek_ocr::preprocess::PreparedImage;
use crate::models::deepseek_ocr::{ArchConfig, DeepseekOcr, Part, Switches, Weights};
use anyhow::{ensure, Result};
use llmprof::region::NoopObserver;
use serde::Serialize;
use tch::{Device, Kind, Tensor};

/// Largest relative L2 error of fp32 embeddings against fp32 eager (the variants only reorder
/// sums).
pub const FP32_REL_ERROR_MAX: f64 = 1e-5;

/// One vision variant against the eager reference.
#[derive(Debug, Clone, Serialize)]
pub struct VisionCheck {
    pub variant: String,
    pub dtype: String,
    pub pages: usize,
    /// Image embeddings per page (token counts must equal eager's).
    pub image_tokens: Vec<i64>,
    /// ‖embeddings − fp32 eager‖ / ‖fp32 eager‖ over all pages.
    pub rel_error: f64,
    /// bf16 only: the same measure for the eager bf16 encoder.
    pub eager_bf16_rel_error: Option<f64>,
    pub passed: bool,
}

/// The vision variants: each switch alone on top of the eager presets (with the switches it
/// needs), then the fast presets with batching. The `usize` is the batched-vision view limit
/// (`None`: one page at a time).
pub fn vision_variants() -> Vec<(&'static str, Switches, Option<usize>)> {
    // SAM's kernels and what they read (the folded bias, the products of q with the tables).
    const KERNELS: [&str; 3] = ["sam_fused_rel_pos", "sam_cuda_kernels", "sam_rel_pos_gemm"];
    let with = |extra: &[&'static str], base: &[&'static str]| -> Vec<&'static str> {
        base.iter().chain(extra).copied().collect()
    };
    let table: Vec<(&'static str, Vec<&'static str>, Option<usize>)> = vec![
        ("sam_fused_rel_pos", vec!["sam_fused_rel_pos"], None),
        ("sam_fused_windows", vec!["sam_fused_windows"], None),
        (
            "sam_cuda_kernels",
            vec!["sam_fused_rel_pos", "sam_cuda_kernels"],
            None,
        ),
        ("sam_rel_pos_gemm", KERNELS.to_vec(), None),
        // With the add + LayerNorm kernel, which reads the windows in place.
        (
            "sam_proj_in_windows",
            vec![
                "sam_fused_rel_pos",
                "sam_cuda_kernels",
                "sam_proj_in_windows",
                "add_layer_norm_kernel",
            ],
            None,
        ),
        ("vision_uint8_upload", vec!["vision_uint8_upload"], None),
        ("sam_patch_gemm", vec!["sam_patch_gemm"], None),
        ("add_layer_norm_kernel", vec!["add_layer_norm_kernel"], None),
        ("quick_gelu_kernel", vec!["quick_gelu_kernel"], None),
        ("sam_gelu_epilogue", vec!["sam_gelu_epilogue"], None),
        ("clip_gelu_epilogue", vec!["clip_gelu_epilogue"], None),
        // With SAM's kernels and the windowed projection it feeds.
        (
            "sam_window_attention_kernel",
            with(
                &[
                    "sam_proj_in_windows",
                    "add_layer_norm_kernel",
                    "sam_window_attention_kernel",
                ],
                &KERNELS,
            ),
            None,
        ),
        // With SAM's kernels, whose products of q with the tables they read.
        (
            "sam_global_attention_kernel",
            with(&["sam_global_attention_kernel"], &KERNELS),
            None,
        ),
        (
            "sam_window_fmha_kernel",
            with(&["sam_window_fmha_kernel"], &KERNELS),
            None,
        ),
        ("vision_cuda_graph", vec!["vision_cuda_graph"], None),
        (
            "vision_streams",
            vec!["vision_cuda_graph", "vision_streams"],
            Some(16),
        ),
        // Uploads captured in the pass's graph, replayed with other pages' views.
        (
            "vision_graph_uploads",
            vec![
                "vision_uint8_upload",
                "vision_graph_uploads",
                "vision_cuda_graph",
                "vision_streams",
            ],
            Some(16),
        ),
        ("batched_vision", vec![], Some(16)),
    ];
    let eager = Switches::eager();
    let mut v: Vec<(&'static str, Switches, Option<usize>)> = table
        .into_iter()
        .map(|(name, on, batch)| {
            let (switches, unknown) = eager.with_on(&on);
            assert!(
                unknown.is_empty(),
                "not switches of this family: {unknown:?}"
            );
            (name, switches, batch)
        })
        .collect();
    v.push(("all", Switches::fast(), Some(16)));
    v
}

/// Every page's embeddings, concatenated, as fp32 on the CPU.
fn embeddings(
    weights: &Weights,
    cfg: &ArchConfig,
    optim: &Switches,
    batch: Option<usize>,
    pages: &[PreparedImage],
) -> Result<(Tensor, Vec<i64>)> {
    let m = DeepseekOcr::load_with(weights.shallow_clone(), cfg, optim)?;
    let obs = NoopObserver;
    // The pages as a run readies them for this model (pinned uint8 or fp32), in new memory
    // each time.
    let ready = || -> Result<Vec<PreparedImage>> {
        pages
            .iter()
            .map(|p| {
                let mut mine = PreparedImage {
                    global: p.global.shallow_clone(),
                    tiles: p.tiles.as_ref().map(Tensor::shallow_clone),
                    ..*p
                };
                m.ready_pixels(&mut mine)?;
                Ok(mine)
            })
            .collect()
    };
    let run = |pages: &[PreparedImage]| -> Result<Vec<Tensor>> {
        match batch {
            Some(max_views) => m.encode_batch(&pages.iter().collect::<Vec<_>>(), max_views, &obs),
            None => pages.iter().map(|p| m.encode_images(p, &obs)).collect(),
        }
    };
    let mut first = ready()?;
    let mut per_page = run(&first)?;
    if optim.own.vision_cuda_graph {
        // The first pass ran eagerly and captured; check what the replays return. They read
        // other host memory than the capture's: the first pages stay alive (their memory is not
        // reused) and are zeroed once read, so a replay still reading them would show.
        if weights.device().is_cuda() {
            crate::ffi::cuda_device_synchronize()?;
        }
        for p in &mut first {
            let _zeroed = p.global.f_zero_()?;
            if let Some(t) = p.tiles.as_mut() {
                let _zeroed = t.f_zero_()?;
            }
        }
        per_page = run(&ready()?)?;
        drop(first);
        if let Some(stats) = m.vision_graph_stats() {
            ensure!(
                stats.captured > 0 && stats.replays >= stats.captured as u64,
                "vision CUDA graphs were not replayed: {stats:?}"
            );
        }
    }
    let counts = per_page.iter().map(|t| t.size()[0]).collect();
    let all = Tensor::f_cat(&per_page, 0)?
        .f_to_device(Device::Cpu)?
        .f_to_kind(Kind::Double)?;
    Ok((all, counts))
}

fn rel_error(a: &Tensor, reference: &Tensor) -> Result<f64> {
    let denom = reference.f_norm()?.f_double_value(&[])?;
    ensure!(denom > 0.0, "reference embeddings are all zero");
    Ok(a.f_sub(reference)?.f_norm()?.f_double_value(&[])? / denom)
}

/// Runs every variant of [`vision_variants`] in fp32 and bf16 on `pages` with vision weights
/// seeded by `seed`.
pub fn check(
    cfg: &ArchConfig,
    device: Device,
    seed: i64,
    pages: &[PreparedImage],
) -> Result<Vec<VisionCheck>> {
    ensure!(
        !pages.is_empty(),
        "the vision check needs at least one page"
    );
    let parts = [Part::Sam, Part::Encoder, Part::Projector];
    let w32 = Weights::synthetic(cfg, &parts, seed, device, Kind::Float)?;
    let w16 = w32.to_kind(Kind::BFloat16)?;
    let (reference, counts) = embeddings(&w32, cfg, &Switches::eager(), None, pages)?;
    let (eager16, _) = embeddings(&w16, cfg, &Switches::eager(), None, pages)?;
    let eager16_err = rel_error(&eager16, &reference)?;
    let mut out = Vec::new();
    for (name, optim, batch) in vision_variants() {
        for (dtype, w) in [("fp32", &w32), ("bf16", &w16)] {
            let (got, got_counts) = embeddings(w, cfg, &optim, batch, pages)?;
            let same_counts = got_counts == counts;
            let err = if same_counts {
                rel_error(&got, &reference)?
            } else {
                f64::INFINITY
            };
            let (bound_ok, eager) = if dtype == "fp32" {
                (err <= FP32_REL_ERROR_MAX, None)
            } else {
                (
                    err <= BF16_ERROR_GROWTH_MAX * eager16_err,
                    Some(eager16_err),
                )
            };
            out.push(VisionCheck {
                variant: name.to_string(),
                dtype: dtype.to_string(),
                pages: pages.len(),
                image_tokens: got_counts,
                rel_error: err,
                eager_bf16_rel_error: eager,
                passed: same_counts && bound_ok,
            });
        }
    }
    Ok(out)
}

/// The check's results as a markdown table.
pub fn table(checks: &[VisionCheck]) -> String {
    let mut s = String::from("Vision embeddings against fp32 eager (pages alone, reference SAM attention):\n\n| variant | dtype | pages | image tokens | rel L2 error | eager bf16 error | result |\n|---|---|---:|---|---:|---:|---|\n");
    for c in checks {
        s.push_str(&format!(
            "| {} | {} | {} | {:?} | {:.2e} | {} | {} |\n",
            c.variant,
            c.dtype,
            c.pages,
            c.image_tokens,
            c.rel_error,
            c.eager_bf16_rel_error
                .map_or("—".to_string(), |e| format!("{e:.2e}")),
            if c.passed { "pass" } else { "FAIL" }
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::deepseek_ocr::preprocess;
    use llmprof::model::deepseek_ocr::views::PreprocessConfig;

    #[test]
    fn every_vision_switch_matches_eager_on_the_tiny_models() {
        for cfg in [ArchConfig::tiny(), ArchConfig::tiny_ocr2()] {
            check_tiny(cfg);
        }
    }

    fn check_tiny(cfg: ArchConfig) {
        // Tiny crop mode: 128 px global views, 64 px tiles; a 2x1 grid, a 1x2 grid, no tiles.
        let pc = PreprocessConfig {
            base_size: 128,
            image_size: 64,
            crop_mode: true,
            min_crops: 2,
            max_crops: 4,
        };
        let page = |w: u32, h: u32, k: u32| {
            let img = image::RgbImage::from_fn(w, h, |x, y| {
                image::Rgb([((x * k) % 256) as u8, ((y * 3 + k) % 256) as u8, 40])
            });
            preprocess::preprocess(&img, &pc).unwrap()
        };
        let pages = [page(150, 70, 1), page(70, 150, 2), page(60, 50, 3)];
        let checks = check(&cfg, Device::Cpu, 3, &pages).unwrap();
        assert_eq!(checks.len(), 2 * vision_variants().len());
        for c in &checks {
            assert!(c.passed, "{c:?}");
            assert_eq!(c.image_tokens.len(), 3);
            if c.dtype == "bf16" {
                // bf16 really rounds: zero would mean the bf16 run used fp32 weights.
                assert!(c.eager_bf16_rel_error.unwrap() > 1e-4, "{c:?}");
            }
        }
        assert!(table(&checks).contains("| all | bf16 | 3 |"));
    }
}
