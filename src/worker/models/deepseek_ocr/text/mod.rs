//! The language model (docs/deepseek-ocr.md §2): the MoE FFN and the decoder on the shared
//! stack (`models::layers` and the engine: attention with RoPE over the KV cache, logits).
pub mod decoder;
pub mod moe;
