//! Numerical checks run by `llmprof debug`: logits and SAM features for comparison with HF
//! transformers, and every fast-path switch against the eager path.
pub mod debug;
pub mod debug_vision;
pub mod fast_path;
pub mod vision_fast_path;
