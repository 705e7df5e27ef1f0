//! Reading checkpoints, for every family: safetensors files (headers and offsets checked before
//! anything is read, docs/security.md) and tensors found under their official names. A family
//! names its tensors; this reads them.
pub mod safetensors;
pub mod tensors;
