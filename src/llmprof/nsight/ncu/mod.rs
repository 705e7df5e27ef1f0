//! Nsight Compute: argv builders, the CSV parser, and per-kernel roofline inputs derived from it.

pub mod command;
pub mod metrics;
pub mod parse;
