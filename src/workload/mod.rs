//! The libtorch side of llmprof, compiled only into `llmprof-worker` (never into the library
//! or the front end, which must start without loading libtorch).
pub mod bench_overhead;
pub mod infer;
pub mod inputs;
pub mod kineto_pass;
// The model's API is wider than what today's stages call (tests, debug tools, the fast-path
// switches of later work); in a binary crate `pub` alone does not count as use.
#[allow(dead_code, unused_imports)]
pub mod model;
pub mod setup;
pub mod stage1;
pub mod stage1_report;
