//! Building blocks any family composes (tensor code): RMSNorm, SwiGLU and the other MLPs, GQA
//! attention with RoPE and multi-head latent attention over the engine's KV cache, the decoder
//! stack, mixtures of experts, and the pre-LayerNorm block stack of vision encoders.
pub mod attention;
pub mod basic;
pub mod block_input;
pub mod decoder;
pub mod decoder_layer;
pub mod gate_up;
pub mod hf_tokenizer;
pub mod mla;
pub mod moe;
pub mod moe_router;
pub mod moe_shape;
pub mod moe_shared_slots;
pub mod pre_norm;
pub mod rms_norm;
pub mod self_attention;
