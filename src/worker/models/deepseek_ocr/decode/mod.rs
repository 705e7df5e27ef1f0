//! The generation loop (prefill, then decode steps with stop rules) and how steps run: eagerly or
//! replayed from CUDA graphs captured per batch size and KV window.
pub mod generate;
