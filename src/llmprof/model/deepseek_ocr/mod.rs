//! DeepSeek-OCR and DeepSeek-OCR-2 without tensors (docs/deepseek-ocr.md): the architecture, the regions the model
//! marks, page views and prompt layout, analytic FLOPs/bytes, the static report and the grounded
//! output grammar. The tensor code is the worker's `models::deepseek_ocr`.
pub mod analytic;
pub mod analytic_bytes;
pub mod analytic_modules;
pub mod arch;
pub mod arch_hf;
pub mod arch_ocr2;
pub mod optim;
pub mod output;
mod preprocess_spec;
pub mod prompt;
pub mod static_report;
pub mod tokenizer;
pub mod views;
pub mod vision_modules;

pub use arch::ArchConfig;
pub use arch_ocr2::{QueryEncoderConfig, TokenLayout};
pub use optim::DeepseekOcrOptim;
pub use preprocess_spec::PreprocessSpec;

/// The `model_type` of the released checkpoints' config.json.
pub const HF_MODEL_TYPES: &[&str] = &["deepseek_vl_v2"];

use crate::region::{Region, RegionTree, DECODE, DECODE_STEP, PREFILL};

/// The whole vision path (SAM, CLIP, projector) inside prefill.
pub const VISION: Region = Region::within("vision", PREFILL);
/// SAM ViT-B encoder, neck and compressor over all views of one request.
pub const SAM: Region = Region::within("sam", VISION);
/// CLIP-L over SAM features (DeepSeek-OCR).
pub const CLIP: Region = Region::within("clip", VISION);
/// The Qwen2 encoder over SAM tokens and learned queries (DeepSeek-OCR-2).
pub const QUERY_ENCODER: Region = Region::within("query_encoder", VISION);
/// Concat + linear projector + newline/separator arrangement.
pub const PROJECTOR: Region = Region::within("projector", VISION);

/// Every region DeepSeek-OCR and DeepSeek-OCR-2 mark, parents first (each marks one of `clip`
/// and `query_encoder`).
pub const REGIONS: RegionTree = RegionTree::new(&[
    PREFILL,
    VISION,
    SAM,
    CLIP,
    QUERY_ENCODER,
    PROJECTOR,
    DECODE,
    DECODE_STEP,
])
.with_modules(&[
    crate::region::ENGINE_MODULES,
    crate::model::module_work::DECODER_MODULES,
    analytic_modules::MOE_MODULES,
    vision_modules::VISION_MODULES,
]);
