//! Weights under the official tensor names (docs/deepseek-ocr.md §6): safetensors checkpoints
//! (single file or sharded) or seeded synthetic tensors of the same names and shapes.
pub mod weights;
