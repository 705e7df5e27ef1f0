//! `llmprof __job SWEEP_DIR NUM`: one job of a sweep, as the local and Slurm launchers start it
//! (hidden from --help). Reads the job's overrides and the sweep's composition time from the
//! sweep plan (`.llmprof/sweep.json`), composes as the sweep did, and runs it into its subfolder
//! with the launcher (and Slurm array task id) recorded in status.json.
use super::launch::{run_one, JobOrigin};
use super::shutdown::run_exit_code;
use crate::config::{self, ComposeRequest};
use crate::launcher::SweepPlan;
use crate::run_dir::LaunchedBy;
use anyhow::{Context, Result};
use std::path::Path;

pub fn run(sweep_dir: &Path, num: usize) -> Result<i32> {
    super::shutdown::install()?;
    let plan = SweepPlan::read(sweep_dir)?;
    let job = plan.job(num)?;
    let req = job_request(&plan, &job.overrides);
    let mut composed = config::compose_at(&req, plan.now()?)
        .with_context(|| format!("composing job {num} ({})", job.overrides.join(" ")))?;
    composed.mark_multirun_job(num);
    let wanted = sweep_dir.join(composed.hydra_dir("sweep.subdir")?);
    let origin = JobOrigin {
        launched_by: LaunchedBy {
            launcher: Some(plan.launcher.clone()),
            slurm_job_id: slurm_task_id(),
        },
        sweep_job: Some((sweep_dir.to_path_buf(), num)),
    };
    let (_, state) = run_one(&plan.command, &req, &composed, &wanted, &origin)?;
    Ok(run_exit_code(state))
}

/// The composition request of one job of `plan`.
pub fn job_request(plan: &SweepPlan, overrides: &[String]) -> ComposeRequest {
    ComposeRequest {
        config_dir: plan.config_dir.clone(),
        config_name: plan.config_name.clone(),
        overrides: overrides.to_vec(),
        multirun: false,
        job_name: plan.job_name.clone(),
    }
}

/// `<array job id>_<task id>` inside a Slurm array task.
fn slurm_task_id() -> Option<String> {
    let array = std::env::var("SLURM_ARRAY_JOB_ID").ok()?;
    let task = std::env::var("SLURM_ARRAY_TASK_ID").ok()?;
    Some(format!("{array}_{task}"))
}
