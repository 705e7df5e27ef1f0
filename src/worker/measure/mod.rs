//! Measurement that needs libtorch or CUDA: CUDA-event and host timers, the NVTX region
//! observer, caching-allocator peaks and the Kineto session with its operator/kernel tables.
//! Nothing here knows about a model.
pub mod kineto;
pub mod memory;
pub mod nvtx;
pub mod ops;
pub mod timing;
