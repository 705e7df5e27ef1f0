//! The libtorch side of llmprof, compiled only into `llmprof-worker` (never into the library
//! or the front end, which must start without loading libtorch).
pub mod infer;
pub mod inputs;
pub mod kineto_pass;
pub mod model;
pub mod setup;
pub mod stage1;
pub mod stage1_report;
