//! Nsight Systems: argv builders for `nsys profile`/`nsys stats` and the `nsys stats` CSV parser.

pub mod command;
pub mod parse;
