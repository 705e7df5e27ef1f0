//! DeepSeek-OCR without tensors (docs/deepseek-ocr.md): the architecture, the regions the model
//! marks, page views and prompt layout, analytic FLOPs/bytes, the static report and the grounded
//! output grammar. The tensor code is the worker's `models::deepseek_ocr`.
pub mod analytic;
pub mod analytic_bytes;
pub mod arch;
pub mod arch_hf;
pub mod output;
pub mod prompt;
pub mod static_report;
pub mod tokenizer;
pub mod views;

pub use arch::ArchConfig;

use crate::region::{Region, RegionTree, DECODE, DECODE_STEP, PREFILL};

/// The whole vision path (SAM, CLIP, projector) inside prefill.
pub const VISION: Region = Region::within("vision", PREFILL);
/// SAM ViT-B encoder, neck and compressor over all views of one request.
pub const SAM: Region = Region::within("sam", VISION);
/// CLIP-L over SAM features.
pub const CLIP: Region = Region::within("clip", VISION);
/// Concat + linear projector + newline/separator arrangement.
pub const PROJECTOR: Region = Region::within("projector", VISION);

/// Every region DeepSeek-OCR marks, parents first.
pub const REGIONS: RegionTree =
    RegionTree::new(&[PREFILL, VISION, SAM, CLIP, PROJECTOR, DECODE, DECODE_STEP]);
