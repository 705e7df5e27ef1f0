//! llmprof library.

pub mod measure;
pub mod roofline;
pub mod vendor;
