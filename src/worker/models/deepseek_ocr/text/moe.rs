//! DeepSeek's MoE FFN (docs/deepseek-ocr.md §2): the shared layers' mixture of experts
//! ([`crate::models::layers::moe`]) with DeepSeek's routing (softmax top-k, not renormalised,
//! × routed_scaling_factor) and its shared experts, under the released names.
pub use crate::models::layers::moe::*;
use anyhow::{ensure, Result};
use llmprof::model::deepseek_ocr::arch::DecoderConfig;

/// The MoE of `vs` (`model.layers.{i}.mlp`) as `cfg` describes it.
pub fn load(
    vs: &crate::checkpoint::tensors::WeightPath,
    cfg: &DecoderConfig,
    fused: bool,
) -> Result<Moe> {
    ensure!(
        !cfg.norm_topk_prob,
        "norm_topk_prob=true is not implemented for DeepSeek-OCR's decoder"
    );
    Moe::load(
        vs,
        MoeShape::greedy(
            cfg.n_routed_experts,
            cfg.num_experts_per_tok,
            false,
            cfg.routed_scaling_factor,
            cfg.n_shared_experts > 0,
        ),
        HF_EXPERT_NAMES,
        fused,
    )
}

#[cfg(test)]
mod gpu_tests;

#[cfg(test)]
mod tests;
