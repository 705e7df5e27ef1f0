//! A tensor-parallel rank's progress mark (`<rank dir>/heartbeat`, run_files::HEARTBEAT_FILE):
//! rewritten when the worker starts, as it reads or draws its weights, when its model is built,
//! after each warm-up and request and every few seconds of decode steps, so that the front end
//! can tell a rank that hangs (in a collective whose peer never comes, in a kernel that never
//! ends) from one that works, and stop the run after `runtime.tensor_parallel_timeout_s`
//! (app/rank_watch.rs). Only tensor-parallel ranks write it; [`start`] says where.
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

static DIR: OnceLock<PathBuf> = OnceLock::new();
static LAST: Mutex<Option<Instant>> = Mutex::new(None);

/// The least time between two marks of [`beat`] (the watchdog's timeout is minutes).
const BEAT_EVERY: Duration = Duration::from_secs(2);

/// This process is a tensor-parallel rank writing into `dir` (its run folder): from now on the
/// marks go there, the first one "started". Nothing outside a tensor-parallel run.
pub fn start(dir: &Path) {
    if std::env::var_os(llmprof::run_files::TP_RANK_ENV).is_none() {
        return;
    }
    let _ = DIR.set(dir.to_path_buf());
    mark("started");
}

/// Writes `what` as this rank's mark. A mark that cannot be written is logged, not fatal: the
/// watchdog then sees an older mark, never a wrong one.
pub fn mark(what: &str) {
    let Some(dir) = DIR.get() else {
        return;
    };
    let path = dir.join(llmprof::run_files::HEARTBEAT_FILE);
    if let Err(e) = std::fs::write(&path, what) {
        tracing::warn!("writing the progress mark {}: {e}", path.display());
    }
    if let Ok(mut last) = LAST.lock() {
        *last = Some(Instant::now());
    }
}

/// [`mark`] from work that repeats (each tensor read, each decode step), at most every two
/// seconds: `what` is built only when a mark is due.
pub fn beat(what: impl FnOnce() -> String) {
    if DIR.get().is_none() {
        return;
    }
    let due = LAST
        .lock()
        .map(|last| last.is_none_or(|t| t.elapsed() >= BEAT_EVERY))
        .unwrap_or(false);
    if due {
        mark(&what());
    }
}
