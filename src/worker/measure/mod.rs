//! Measurement that needs libtorch or CUDA: CUDA-event and host timers, the NVTX region
//! observer, caching-allocator peaks and the Kineto session. Nothing here knows about a model;
//! the pure halves (event records, operator/kernel tables, statistics) are in `llmprof::measure`.
pub mod kineto;
pub mod memory;
pub mod nvtx;
pub mod timing;
