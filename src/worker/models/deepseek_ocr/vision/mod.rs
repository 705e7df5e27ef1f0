//! The vision encoder (docs/deepseek-ocr.md §3): SAM ViT-B, CLIP-L on SAM features, the projector
//! and the arrangement of image vectors.
pub mod batch;
pub mod clip;
pub mod linear_act;
pub mod projector;
pub mod query_encoder;
pub mod rel_pos;
pub mod sam;
pub mod sam_attention;
pub mod sam_attention_cuda;
#[cfg(test)]
mod sam_global_attention_tests;
pub mod sam_window_attention;
pub mod sam_window_fmha;
#[cfg(test)]
mod sam_window_fmha_tests;
