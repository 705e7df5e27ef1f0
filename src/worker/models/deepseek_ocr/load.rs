//! Building a [`DeepseekOcr`] from weights: each part the weights hold, with the implementation
//! choices of `runtime.optim`, after checking that the kernels those choices need were built.

use super::{text, vision, ArchConfig, DeepseekOcr, Encoder, Part, Weights};
use crate::engine::lanes::Lanes;
use crate::engine::prefill_graphs::PrefillGraphs;
use crate::models::deepseek_ocr::Switches;
use anyhow::{Context, Result};
use std::path::Path;
use tch::{Device, Kind};
use vision::clip::Clip;
use vision::projector::Projector;
use vision::query_encoder::QueryEncoder;
use vision::sam::Sam;

impl DeepseekOcr {
    /// Builds every part `weights` holds. Consumes the weights so per-expert tensors that the MoE
    /// restacks are freed.
    pub fn load(weights: Weights, cfg: &ArchConfig) -> Result<Self> {
        Self::load_with(weights, cfg, &Switches::eager())
    }

    /// [`DeepseekOcr::load`] with explicit decoder implementation choices.
    pub fn load_with(weights: Weights, cfg: &ArchConfig, optim: &Switches) -> Result<Self> {
        cfg.validate()?;
        if weights.device().is_cuda() {
            let has = |p| weights.has_part(p);
            crate::ffi::kernels::require(
                "model.optim.sam_cuda_kernels",
                optim.own.sam_cuda_kernels && optim.own.sam_fused_rel_pos && has(Part::Sam),
            )?;
            crate::ffi::kernels::require(
                "model.optim.add_layer_norm_kernel",
                optim.own.add_layer_norm_kernel && (has(Part::Sam) || has(Part::Encoder)),
            )?;
            crate::ffi::kernels::require(
                "model.optim.quick_gelu_kernel",
                optim.own.quick_gelu_kernel && cfg.clip.is_some() && has(Part::Encoder),
            )?;
            crate::ffi::kernels::require(
                "model.optim.moe_routing_kernel",
                optim.own.moe_routing_kernel && optim.own.grouped_moe && has(Part::Decoder),
            )?;
            crate::ffi::kernels::require(
                "model.optim.moe_combine_kernel",
                optim.own.moe_combine_kernel && optim.own.moe_routing_kernel && has(Part::Decoder),
            )?;
        }
        let weights_on_gpu = weights.device().is_cuda();
        let vs = weights.root();
        let model = vs.sub("model");
        let sam = if weights.has_part(Part::Sam) {
            let sam_optim = vision::sam_attention::SamOptim {
                fused_rel_pos: optim.own.sam_fused_rel_pos,
                fused_windows: optim.own.sam_fused_windows,
                cuda_kernels: optim.own.sam_cuda_kernels,
                rel_pos_gemm: optim.own.sam_rel_pos_gemm,
                proj_in_windows: optim.own.sam_proj_in_windows,
                patch_gemm: optim.own.sam_patch_gemm,
                add_layer_norm_kernel: optim.own.add_layer_norm_kernel,
                gelu_epilogue: optim.own.sam_gelu_epilogue,
                window_kernel: optim.own.sam_window_attention_kernel,
                global_kernel: optim.own.sam_global_attention_kernel,
                window_fmha: optim.own.sam_window_fmha_kernel,
            };
            let sam =
                Sam::load(&model.sub("sam_model"), &cfg.sam, sam_optim).context("loading SAM")?;
            if weights_on_gpu && optim.own.sam_gelu_epilogue && !sam.gelu_epilogue() {
                tracing::info!(
                    "model.optim.sam_gelu_epilogue: SAM's MLP runs cuBLAS + GELU here (the fused \
                     GEMM needs bf16 weights on a compute capability 9.0 GPU and a build with the \
                     CUTLASS headers)"
                );
            }
            // The Hopper attention kernels' switches, where the kernels cannot run here.
            let hopper_attention = weights.kind() == Kind::BFloat16
                && crate::ffi::kernels_gemm::sam_global_attention_on(weights.device());
            let window_fallback = match optim.own.sam_window_attention_kernel {
                true => {
                    "sam_window_attention_kernel's kernel where it applies (bf16), else the \
                         folded-bias path"
                }
                false => "the folded-bias path",
            };
            for (on, switch, what, fallback) in [
                (
                    optim.own.sam_global_attention_kernel,
                    "sam_global_attention_kernel",
                    "global",
                    "the folded-bias path",
                ),
                (
                    optim.own.sam_window_fmha_kernel,
                    "sam_window_fmha_kernel",
                    "windowed",
                    window_fallback,
                ),
            ] {
                if weights_on_gpu && on && optim.own.sam_cuda_kernels && !hopper_attention {
                    tracing::info!(
                        "model.optim.{switch}: SAM's {what} attention runs {fallback} here \
                         (the kernel needs bf16 weights on a compute capability 9.0 GPU and a \
                         build with the CUTLASS headers)"
                    );
                }
            }
            Some(sam)
        } else {
            None
        };
        let encoder = if weights.has_part(Part::Encoder) {
            Some(match (&cfg.clip, &cfg.query_encoder) {
                (Some(c), _) => {
                    let clip = Clip::load(
                        &model.sub("vision_model"),
                        c,
                        vision::clip::ClipOptim {
                            add_layer_norm_kernel: optim.own.add_layer_norm_kernel,
                            quick_gelu_kernel: optim.own.quick_gelu_kernel,
                            gelu_epilogue: optim.own.clip_gelu_epilogue,
                        },
                    )
                    .context("loading CLIP")?;
                    if weights_on_gpu && optim.own.clip_gelu_epilogue && !clip.gelu_epilogue() {
                        tracing::info!(
                            "model.optim.clip_gelu_epilogue: CLIP's MLP runs cuBLAS + quickGELU \
                             here (the fused GEMM needs bf16 weights on a compute capability 9.0 \
                             GPU and a build with the CUTLASS headers)"
                        );
                    }
                    Encoder::Clip(clip)
                }
                (None, Some(q)) => Encoder::Queries(
                    QueryEncoder::load(&model.sub("qwen2_model"), q, cfg.pixels_per_token(), optim)
                        .context("loading the query encoder")?,
                ),
                (None, None) => anyhow::bail!("the architecture has no encoder after SAM"),
            })
        } else {
            None
        };
        let projector = if weights.has_part(Part::Projector) {
            Some(
                Projector::load(&model, &cfg.projector, cfg.token_layout())
                    .context("loading projector")?,
            )
        } else {
            None
        };
        let decoder = if weights.has_part(Part::Decoder) {
            Some(text::decoder::load(&vs, &cfg.decoder, optim).context("loading decoder")?)
        } else {
            None
        };
        Ok(DeepseekOcr {
            cfg: cfg.clone(),
            sam,
            encoder,
            projector,
            decoder,
            device: weights.device(),
            kind: weights.kind(),
            vision_batch: None,
            uint8_upload: optim.own.vision_uint8_upload,
            graph_uploads: optim.own.vision_graph_uploads,
            vision_lanes: Lanes::new(
                optim.own.vision_cuda_graph && weights_on_gpu,
                "model.optim.vision_cuda_graph",
                match weights.device() {
                    tch::Device::Cuda(d) if optim.own.vision_streams => Some(d),
                    _ => None,
                },
            )?,
            vision_graph_max_pages: optim.own.vision_cuda_graph_max_pages as usize,
            prefill_graphs: PrefillGraphs::for_model(
                &optim.engine,
                weights_on_gpu,
                optim.own.grouped_moe && weights.kind() == Kind::BFloat16,
            ),
        })
    }

    /// Loads `parts` from a checkpoint file or folder.
    pub fn from_checkpoint(
        path: &Path,
        cfg: &ArchConfig,
        parts: &[Part],
        device: Device,
        kind: Kind,
    ) -> Result<Self> {
        Self::load(Weights::load(path, cfg, parts, device, kind)?, cfg)
    }

    /// Seeded random weights for all parts, built on the device.
    pub fn synthetic(cfg: &ArchConfig, seed: i64, device: Device, kind: Kind) -> Result<Self> {
        Self::load(
            Weights::synthetic(cfg, &Part::ALL, seed, device, kind)?,
            cfg,
        )
    }
}
