//! Measurement: Kineto operator/kernel tables, CUDA-event and host timers, statistics, NVML
//! sampling and NVTX ranges. Nothing here knows about the model.
pub mod kineto;
pub mod memory;
pub mod nvml;
pub mod nvtx;
pub mod ops;
pub mod peaks;
pub mod stats;
pub mod timing;
