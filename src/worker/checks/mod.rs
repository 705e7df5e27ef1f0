//! `llmprof debug`: its arguments and dispatch (`debug.rs`), and `llmprof debug fast-path` per
//! architecture (`fast_path_cli.rs`), on the engine's check (`engine::fast_path_check`) with the
//! check subject each family supplies.
pub mod debug;
pub mod debug_ranks;
pub mod fast_path_cli;
