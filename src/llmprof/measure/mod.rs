//! Measurement that needs no libtorch: statistics, GPU peaks, the NVML sampler with its window
//! maths, Kineto's event records and the operator/kernel tables built from them. The CUDA/Kineto
//! session half lives in the worker crate. Nothing here knows about a model.
pub mod capture_record;
pub mod gpu;
pub mod graph_match;
pub mod kernel_names;
pub mod kineto_events;
pub mod kineto_json;
pub mod memory;
pub mod module_attr;
pub mod module_tables;
pub mod nvml;
pub mod nvml_energy;
pub mod nvml_sample;
pub mod op_tables;
pub mod peaks;
pub mod rank_trace;
pub mod stats;
pub mod step_timeline;
