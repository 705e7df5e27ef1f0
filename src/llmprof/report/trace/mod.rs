//! Reports of `llmprof analyze trace`: markdown (printed, or report.md and the full tables in
//! `--out`) and one self-contained report.html built from report.html's widgets
//! (`report::html::{page, table, plots}`). Rendering only; the numbers come from `trace`.
pub mod html;
pub mod markdown;

/// The analysis `analyze trace --out` writes (the JSON `--format json` prints), which `compare`
/// reads back.
pub const ANALYSIS_JSON: &str = "analysis.json";
