//! llmprof, the front end: everything that needs no libtorch. Data flows one way:
//! cli → app → config → spec → (the worker runs the model) → measure → report, with nsight and
//! roofline for stage 2. The `model` module is the interface models implement (in the worker
//! crate) plus what can be known about a model without tensors: architectures, regions, FLOPs.
pub mod app;
pub mod cli;
pub mod compare;
pub mod dataset;
pub mod dtype;
pub mod hub;
pub mod launcher;
pub mod logging;
pub mod measure;
pub mod model;
pub mod nsight;
pub mod optim;
pub mod ranges;
pub mod rank_procs;
pub mod region;
pub mod report;
pub mod roofline;
pub mod run_dir;
pub mod run_files;
pub mod settings;
pub mod spec;
pub mod stdout;
pub mod trace;
pub mod untrusted;

/// The composer crate, under the name the rest of llmprof uses.
pub use llmprof_config as config;

/// `llmprof --version`: the package version and the git commit it was built from.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("LLMPROF_GIT_COMMIT"),
    ")"
);

/// The git commit the binaries were built from (`-dirty` when the tree had changes).
pub const GIT_COMMIT: &str = env!("LLMPROF_GIT_COMMIT");
