//! llmprof-worker: the half of llmprof that links libtorch. `llmprof` starts it with a run
//! directory; it reads config.resolved.yaml, builds the model named there, runs the workload
//! (stage 1, infer) and hands measurements to the front-end library's report builder.
//!
//! - `ffi`: the C++ shim (Kineto, CUDA events and graphs, allocator statistics).
//! - `checkpoint`: reading safetensors checkpoints under official tensor names.
//! - `engine`: generation, CUDA graphs, the KV cache, uploads: how any family's model runs.
//! - `models`: the building blocks (`models::layers`) and one folder per model family, behind
//!   `llmprof::model`'s interface.
//! - `checks`: the fast-path checks of `llmprof debug fast-path`.
//! - `measure`: what needs CUDA or Kineto: event timers, the NVTX observer, allocator peaks.
//! - `workload`: the loops that drive a model: stage 1, infer, the overhead benchmark.
//! - `heartbeat`: a tensor-parallel rank's progress mark, written from any of them.
pub mod checkpoint;
pub mod checks;
pub mod engine;
pub mod ffi;
pub mod heartbeat;
pub mod measure;
pub mod models;
#[cfg(test)]
pub(crate) mod test_util;
pub mod workload;
