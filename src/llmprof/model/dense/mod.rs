//! Dense decoder LLMs (Qwen2, Qwen3, Llama 3, ...) without tensors (docs/models.md): the architecture
//! from HF config.json fields, the regions the model marks, analytic FLOPs/bytes and the static
//! report. The tensor code is the worker's `models::dense`.
pub mod analytic;
pub mod analytic_modules;
pub mod arch;
pub mod gemma;
pub mod mla;
pub mod moe;
pub mod optim;
pub mod static_report;
pub mod tensor_parallel;
pub mod window;

pub use arch::{DenseArch, RopeScaling};
pub use mla::{Mla, Yarn};
pub use moe::{DenseMoe, GroupLimit, GroupScore, MoeNames, Scoring};
pub use optim::DenseOptim;

/// The `model_type`s of the HF config.json files this family reads (Qwen2/2.5, Qwen3, Llama 3,
/// Mistral, Phi-3, Gemma 3, with a mixture of experts Mixtral and Qwen3-MoE, and with
/// multi-head latent attention DeepSeek-V2/V3).
pub const HF_MODEL_TYPES: &[&str] = &[
    "qwen2",
    "qwen3",
    "llama",
    "mistral",
    "mixtral",
    "qwen3_moe",
    "phi3",
    "gemma3_text",
    "deepseek_v2",
    "deepseek_v3",
];

use crate::region::{RegionTree, DECODE, DECODE_STEP, PREFILL};

/// Every region a dense decoder marks: the generation loop's only; below them, the shared
/// decoder's modules (model/module_work.rs).
pub const REGIONS: RegionTree = RegionTree::new(&[PREFILL, DECODE, DECODE_STEP]).with_modules(&[
    crate::region::ENGINE_MODULES,
    crate::model::module_work::DECODER_MODULES,
    crate::model::module_work::MOE_MODULES,
]);

#[cfg(test)]
mod hand_counts;
#[cfg(test)]
mod tests;
