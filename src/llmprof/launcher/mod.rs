//! Launchers (Hydra's `hydra/launcher` group): how the jobs of a sweep run. `basic` runs them one
//! after another in this process, `local` runs several `llmprof __job` processes at once (one GPU
//! each), `slurm` submits one job array. Every launcher works from the same sweep plan
//! (`plan.rs`), so every sweep directory has the same layout, and reports each job as a
//! [`JobResult`]; summary.md and the exit code are the caller's (app/multirun.rs).
pub mod basic;
pub mod conf;
pub mod gpus;
pub mod local;
pub mod observe;
pub mod plan;
pub mod progress;
pub mod slurm;

pub use conf::LauncherConf;
pub use plan::{PlannedJob, SweepPlan};
use std::path::PathBuf;

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Not started yet (queued here or pending in Slurm); "not started" when the sweep ends.
    Pending,
    Running,
    Succeeded,
    Failed,
    Interrupted,
}

impl JobState {
    pub fn is_final(self) -> bool {
        !matches!(self, JobState::Pending | JobState::Running)
    }
}

/// One job of a sweep, as a launcher last saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobResult {
    pub num: usize,
    pub state: JobState,
    /// Why it failed when its status.json cannot say (a composition error, Slurm's reason, a
    /// job that wrote no status).
    pub reason: Option<String>,
    pub run_dir: Option<PathBuf>,
    /// The GPU the job ran on, from its env.json ("NVIDIA H100 80GB HBM3 (GPU 1)").
    pub gpu: Option<String>,
}

impl JobResult {
    pub fn pending(num: usize) -> Self {
        JobResult {
            num,
            state: JobState::Pending,
            reason: None,
            run_dir: None,
            gpu: None,
        }
    }

    pub fn failed(num: usize, reason: String) -> Self {
        JobResult {
            state: JobState::Failed,
            reason: Some(reason),
            ..JobResult::pending(num)
        }
    }
}

/// A function the signal thread calls with the signal, to stop the launched jobs.
pub type Cancel = Box<dyn Fn(i32) + Send>;

/// What a launcher needs from the process around it (app's signal handling and the in-process
/// runner), so that launchers never import `app`.
pub trait Host {
    /// The signal that asked the sweep to stop, if one arrived.
    fn interrupted(&self) -> Option<i32>;
    /// What to call on the first signal (None: nothing to cancel any more).
    fn set_cancel(&self, cancel: Option<Cancel>);
    /// The latest state of every job, for the summary written if the process must exit early.
    fn record(&self, results: &[JobResult]);
    /// Runs one job in this process (the basic launcher).
    fn run_here(&self, plan: &SweepPlan, job: &PlannedJob) -> JobResult;
}

/// Runs the jobs `nums` of a plan and reports every one of them (in the order of `nums`).
pub trait Launcher {
    fn launch(
        &self,
        plan: &SweepPlan,
        nums: &[usize],
        host: &dyn Host,
    ) -> anyhow::Result<Vec<JobResult>>;
}

/// The launcher a composed `hydra.launcher` config asks for.
pub fn for_conf(conf: &LauncherConf) -> Box<dyn Launcher> {
    match conf {
        LauncherConf::Basic => Box::new(basic::Basic),
        LauncherConf::Local(c) => Box::new(local::Local { conf: c.clone() }),
        LauncherConf::Slurm(c) => Box::new(slurm::Slurm {
            conf: (**c).clone(),
        }),
    }
}
