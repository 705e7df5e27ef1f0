//! A tensor-parallel rank's progress mark (`<rank dir>/heartbeat`, run_files::HEARTBEAT_FILE):
//! rewritten when the worker starts, when its model is loaded and after each request, so that
//! the front end can tell a rank that hangs (in a collective whose peer never comes, in a kernel
//! that never ends) from one that works, and stop the run after
//! `runtime.tensor_parallel_timeout_s` (app/tp_launch.rs). Only tensor-parallel ranks write it.
use std::path::Path;

/// Writes `what` as this rank's mark in `dir` (its run folder); nothing outside a
/// tensor-parallel run. A mark that cannot be written is logged, not fatal: the watchdog then
/// sees an older mark, never a wrong one.
pub fn mark(dir: &Path, what: &str) {
    if std::env::var_os(llmprof::run_files::TP_RANK_ENV).is_none() {
        return;
    }
    let path = dir.join(llmprof::run_files::HEARTBEAT_FILE);
    if let Err(e) = std::fs::write(&path, what) {
        tracing::warn!("writing the progress mark {}: {e}", path.display());
    }
}
