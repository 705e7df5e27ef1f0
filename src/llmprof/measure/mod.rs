//! Measurement that needs no libtorch: statistics, GPU peaks and the NVML sampler with its window
//! maths. The CUDA/Kineto half lives in the worker crate. Nothing here knows about a model.
pub mod nvml;
pub mod peaks;
pub mod stats;
