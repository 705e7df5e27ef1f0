//! llmprof-worker: the half of llmprof that links libtorch. `llmprof` starts it with a run
//! directory; it reads config.resolved.yaml, builds the model named there, runs the workload
//! (stage 1, infer) and hands measurements to the front-end library's report builder.
//!
//! - `ffi`: the C++ shim (Kineto, CUDA events and graphs, allocator statistics).
//! - `measure`: what needs CUDA or Kineto: event timers, the NVTX observer, allocator peaks.
//! - `models`: the tensor code, one folder per model family, behind `llmprof::model`'s interface.
//! - `workload`: the loops that drive a model: stage 1, infer, the overhead benchmark.
pub mod ffi;
pub mod measure;
pub mod models;
pub mod workload;
