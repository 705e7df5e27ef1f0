//! Nsight Systems / Nsight Compute integration: argv builders, tool lookup, CSV parsers, and the
//! `llmprof analyze` entry points. Nothing here links libtorch.

pub mod analyze;
pub mod csv_input;
pub mod intern;
pub mod ncu;
pub mod nsys;
pub mod tool;
pub mod units;

pub use tool::{find_tool, find_tool_configured, ToolMissing};
