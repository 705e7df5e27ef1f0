//! The loops that drive a model: stage 1 (timed repeats, NVML, one Kineto pass), infer
//! (predictions), the overhead and n-gram benchmarks; plus building the model from the spec and preparing
//! the inputs.
pub mod bench_ngram;
pub mod bench_overhead;
pub mod bench_support;
pub mod infer;
pub mod inputs;
pub mod kineto_pass;
pub mod stage1;
