//! `llmprof analyze trace`: any PyTorch profiler (Kineto) trace analysed as stage 1's are: the
//! operator and kernel tables, kernels grouped by the annotations around them, the GPU's time
//! split into computation, communication, copies and idle (per device, per iteration), CUDA-graph
//! replays, and several ranks side by side. Reading is `measure::kineto_json`; rendering is
//! `report::trace`. Pure.
pub mod analysis;
pub mod intervals;
pub mod iterations;
pub mod ranks;
pub mod regions;
#[cfg(test)]
mod tests;
pub mod timeline;

pub use analysis::{analyse, Options, TraceAnalysis};
