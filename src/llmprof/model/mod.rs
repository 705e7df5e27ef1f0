//! Models as the front end knows them, without tensors: the interface a model implements
//! (`Model`, in the worker), the generation request, model families with their typed
//! architectures, and each family's pure half (architecture, regions, analytic FLOPs/bytes).
pub mod checkpoint_config;
pub mod config_json;
pub mod deepseek_ocr;
pub mod dense;
mod family;
mod generate;
pub mod hf_checkpoint;
mod interface;
pub mod module_work;
pub mod tokenizer;

pub use family::{Arch, Family, FamilyOptim};
pub use generate::{GenerateConfig, GenerateOutput, NoRepeatNgram};
pub use interface::{
    BatchWork, GraphStats, ImageInfo, LayoutElement, Model, ModelInfo, PageReading, RequestInfo,
    StaticAnalysis, SYNTHETIC_NOTE,
};
