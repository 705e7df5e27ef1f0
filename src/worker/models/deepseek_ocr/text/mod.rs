//! The language model (docs/deepseek-ocr.md §2): attention with RoPE over the KV cache, the MoE
//! FFN, the decoder stack and its logits.
pub mod attention;
pub mod decoder;
pub mod kv_cache;
pub mod moe;
