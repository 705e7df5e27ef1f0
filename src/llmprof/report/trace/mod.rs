//! Reports of `llmprof analyze trace`: markdown (printed, or report.md and the full tables in
//! `--out`) and one self-contained report.html (`report::html::trace_page`, beside the other
//! pages it shares widgets with). Rendering only; the numbers come from `trace`.
pub mod markdown;

pub use super::html::trace_page as html;
