//! Nsight Compute: argv builders, the CSV parser, per-kernel roofline inputs derived from it, and
//! the analysis (`llmprof analyze ncu`, stage 2's roofline) built on them.

pub mod analysis;
pub mod command;
pub mod diagnose;
pub mod metrics;
pub mod parse;
