//! The engine: how any model the workload drives runs, whatever its family. The generation loop
//! (prefill, decode steps, stop rules, the n-gram ban on the device), the decode-step paths
//! (eager, or replayed from CUDA graphs captured per batch size and KV window), CUDA graphs of
//! tensor functions per input shape (with their uploads and a second stream), prefill graphs, the
//! KV cache, host-to-device uploads, the device and dtype a run uses, and the switches a model is
//! built with (the engine's `runtime.optim` beside its family's `model.optim`), and the check of
//! every switch against the eager presets on any `CausalLm` (`fast_path_check`). Families plug in
//! through [`causal_lm::CausalLm`]; nothing here names a family.
pub mod capture_marks;
pub mod causal_lm;
pub mod collectives;
pub mod device;
pub mod fast_path_check;
pub mod generate;
pub mod graph_decode;
pub mod graph_uploads;
pub mod kept_graphs;
pub mod kv_cache;
pub mod lanes;
pub mod ngram_device;
pub mod prefill_graphs;
pub mod replay;
pub mod shape_graphs;
pub mod size_cache;
pub mod switches;
pub mod upload;
