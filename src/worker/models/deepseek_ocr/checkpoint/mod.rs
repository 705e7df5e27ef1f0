//! Weights under the official tensor names (docs/deepseek-ocr.md §6): the layout, safetensors
//! checkpoints (single file or sharded) and seeded synthetic tensors of the same names and shapes.
pub mod tensor_names;
pub mod weights;
