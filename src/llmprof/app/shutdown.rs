//! One shutdown path for SIGINT, SIGTERM and SIGHUP. A signal thread records the signal and
//! forwards it to the running child (the worker, or a stage-2 child); the main thread, once the
//! child has exited, marks the run `interrupted` with the signal's name and stops a multirun after
//! writing its summary. A child that ignores the signal is killed after [`CHILD_GRACE`]; when no
//! child runs, or the main thread does not finish within [`MAIN_GRACE`], the signal thread marks
//! the run itself and exits. A run is marked once: nothing is written into it after that.
use crate::run_dir::{RunDir, RunState};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How long a child may take to exit after the forwarded signal before it is killed.
pub const CHILD_GRACE: Duration = Duration::from_secs(10);
/// How long the main thread may take to mark the run after the child is gone.
pub const MAIN_GRACE: Duration = Duration::from_secs(5);

static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// Writes a sweep's summary.md, given the state to record for the job that was running.
pub type SummaryWriter = Box<dyn Fn(&str) + Send>;

/// Stops a sweep's launched jobs (forwards the signal to local jobs, cancels a Slurm array).
pub type SweepCancel = Box<dyn Fn(i32) + Send>;

/// How long the main thread may take to finish a sweep after its jobs were cancelled (Slurm
/// jobs take a while to leave the queue); a second signal ends it at once.
pub const SWEEP_GRACE: Duration = Duration::from_secs(90);

/// What is running now, for the signal thread.
#[derive(Default)]
struct Progress {
    run: Option<PathBuf>,
    /// The children running now (a run's worker, or its tensor-parallel ranks).
    children: Vec<u32>,
    /// Called once on the first signal when a launcher runs the sweep's jobs elsewhere.
    sweep_cancel: Option<SweepCancel>,
    /// Called to write a sweep's summary when the signal thread has to finish alone.
    sweep_summary: Option<SummaryWriter>,
}

static PROGRESS: Mutex<Option<Progress>> = Mutex::new(None);

fn with_progress<T>(f: impl FnOnce(&mut Progress) -> T) -> T {
    let mut guard = PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Progress::default))
}

/// Starts the signal thread (once per process).
pub fn install() -> anyhow::Result<()> {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    let mut result = Ok(());
    INSTALLED.call_once(|| {
        result = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
            .map(|mut signals| {
                std::thread::spawn(move || {
                    for sig in signals.forever() {
                        on_signal(sig);
                    }
                });
            })
            .map_err(|e| anyhow::anyhow!("installing the signal handlers: {e}"));
    });
    result
}

/// The signal received, if any.
pub fn interrupted() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// The exit code of a process ended by `sig` (as shells report it).
pub fn exit_code(sig: i32) -> i32 {
    128 + sig
}

/// The text status.json carries for an interrupted run.
pub fn interrupted_message(sig: i32) -> String {
    format!(
        "interrupted by {} before the run finished; files written so far are kept",
        signal_name(sig)
    )
}

/// The run directory being worked on (None between runs).
pub fn set_run(run: Option<PathBuf>) {
    with_progress(|p| p.run = run);
}

/// The child process running now (None when it has been waited for).
pub fn set_child(pid: Option<u32>) {
    set_children(pid.into_iter().collect());
}

/// The child processes running now (empty when all have been waited for).
pub fn set_children(pids: Vec<u32>) {
    with_progress(|p| p.children = pids);
}

/// How to write the running sweep's summary, given the state of the job being interrupted.
pub fn set_sweep_summary(write: Option<SummaryWriter>) {
    with_progress(|p| p.sweep_summary = write);
}

/// How to stop the jobs a launcher started (None when there is nothing to cancel).
pub fn set_sweep_cancel(cancel: Option<SweepCancel>) {
    with_progress(|p| p.sweep_cancel = cancel);
}

/// Marks `run` interrupted unless it already has a final state (a run is marked once).
pub fn mark_interrupted(run: &RunDir, sig: i32) {
    let already_final = run
        .status()
        .map(|s| s.state != RunState::Running)
        .unwrap_or(false);
    if !already_final {
        if let Err(e) = run.finish(RunState::Interrupted, Some(interrupted_message(sig))) {
            eprintln!(
                "llmprof: could not mark {} interrupted: {e:#}",
                run.path.display()
            );
        }
    }
}

fn on_signal(sig: i32) {
    let first = RECEIVED.swap(sig, Ordering::SeqCst) == 0;
    let children = with_progress(|p| p.children.clone());
    match (first, children.is_empty()) {
        (true, false) => {
            for &pid in &children {
                // With its process group where it leads one (a profiled rank).
                crate::rank_procs::signal(pid, sig);
            }
            std::thread::spawn(move || {
                std::thread::sleep(CHILD_GRACE);
                let left = with_progress(|p| p.children.clone());
                for pid in children.into_iter().filter(|p| left.contains(p)) {
                    eprintln!(
                        "llmprof: the child {pid} did not stop within {} s of {}: killing it",
                        CHILD_GRACE.as_secs(),
                        signal_name(sig)
                    );
                    crate::rank_procs::signal(pid, libc::SIGKILL);
                }
                std::thread::sleep(MAIN_GRACE);
                finish_and_exit(sig);
            });
        }
        (true, true) => match with_progress(|p| p.sweep_cancel.take()) {
            // A launcher's jobs: cancel them; the main thread then writes the summary and exits.
            Some(cancel) => {
                cancel(sig);
                std::thread::spawn(move || {
                    std::thread::sleep(SWEEP_GRACE);
                    finish_and_exit(sig);
                });
            }
            None => finish_and_exit(sig),
        },
        // A second signal: finish now.
        _ => finish_and_exit(sig),
    }
}

/// Marks the current run interrupted, writes the sweep summary, and exits.
fn finish_and_exit(sig: i32) -> ! {
    let (run, summary) = with_progress(|p| (p.run.clone(), p.sweep_summary.take()));
    if let Some(path) = run {
        mark_interrupted(&RunDir { path: path.clone() }, sig);
        eprintln!(
            "\ninterrupted ({}): run directory kept at {}",
            signal_name(sig),
            path.display()
        );
    }
    if let Some(write) = summary {
        write(&format!("interrupted ({})", signal_name(sig)));
    }
    std::process::exit(exit_code(sig));
}

/// The stage stopped because a signal arrived (its number).
#[derive(Debug)]
pub struct Interrupted(pub i32);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&interrupted_message(self.0))
    }
}

impl std::error::Error for Interrupted {}

/// The exit code of a finished run.
pub fn run_exit_code(state: RunState) -> i32 {
    match state {
        RunState::Succeeded => 0,
        RunState::Interrupted => exit_code(interrupted().unwrap_or(2)),
        _ => 1,
    }
}
