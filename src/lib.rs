//! llmprof library.
pub mod ffi;
pub mod measure;
pub mod region;
