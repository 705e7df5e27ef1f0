//! Run reports: measurements (plain data from the worker) → `RunReport` (the one source of every
//! number, serialised as metrics.json) → its renderings (report.md, stakeholder_summary.md), the
//! artifact files of a run directory, and the layout-box images of `llmprof infer`.
pub mod artifacts;
pub mod boxes;
pub mod html;
pub mod markdown;
pub mod measurements;
pub mod metrics;
pub mod metrics_modules;
pub mod metrics_ranks;
pub mod modules_md;
pub mod rebuild;
pub mod stage1;
pub mod summary;
pub mod sweep;
pub mod trace;

pub use metrics::*;
