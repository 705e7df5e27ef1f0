//! llmprof: profile LLM inference (DeepSeek-OCR) on NVIDIA GPUs.
//! Data flow: cli → app → config → spec → stages → {model, measure, vendor} → report.
//! The model itself (tch) lives in src/workload and is compiled only into `llmprof-worker`.
pub mod app;
pub mod cli;
pub mod config;
pub mod dataset;
pub mod ffi;
pub mod logging;
pub mod measure;
pub mod region;
pub mod report;
pub mod roofline;
pub mod run_dir;
pub mod spec;
pub mod vendor;
