//! Run reports: `RunReport` (the one source of every number, serialised as metrics.json) and
//! its renderings (report.md, stakeholder_summary.md), plus the layout-box images of `llmprof infer`.
//! Computes nothing new from raw data.
pub mod boxes;
pub mod markdown;
pub mod metrics;
pub mod summary;

pub use metrics::*;
