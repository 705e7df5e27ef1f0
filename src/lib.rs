//! llmprof library.
pub mod model;
pub mod region;
