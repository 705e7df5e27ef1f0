//! `-m`: expand the sweep into a fresh sweep directory (never reused) with `multirun.yaml` and the
//! sweep plan, hand the jobs to the launcher chosen by `hydra/launcher` (basic, local, slurm), and
//! write `summary.md` (every job's state, also when a signal stops the sweep: finished jobs keep
//! theirs, interrupted ones say so, the rest are listed as not started). `--resume SWEEP_DIR`
//! runs again, into the same sweep, only the jobs that did not succeed.
use super::job_entry::job_request;
use super::launch::{run_one, JobOrigin};
use super::shutdown::{self, run_exit_code};
use crate::config::{self, sweep, ComposeRequest, Composed};
use crate::launcher::observe::{gpu_of, observe};
use crate::launcher::plan::select_for_resume;
use crate::launcher::{Cancel, Host, JobResult, JobState, LauncherConf, PlannedJob, SweepPlan};
use crate::report::sweep::SweepJob;
use crate::run_dir::{create_fresh_dir, write_atomic, LaunchedBy, RunState};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One line of summary.md.
#[derive(Debug, Clone)]
struct JobRow {
    num: usize,
    overrides: String,
    /// The overrides one by one.
    args: Vec<String>,
    status: String,
    dir: String,
    /// The GPU the job ran on (a column only when some job had one).
    gpu: String,
}

fn summary_table(rows: &[JobRow]) -> String {
    let gpus = rows.iter().any(|r| !r.gpu.is_empty());
    let mut table = if gpus {
        String::from("| job | overrides | status | directory | GPU |\n|---|---|---|---|---|\n")
    } else {
        String::from("| job | overrides | status | directory |\n|---|---|---|---|\n")
    };
    for r in rows {
        table.push_str(&format!(
            "| {} | `{}` | {} | {} |",
            r.num, r.overrides, r.status, r.dir
        ));
        if gpus {
            table.push_str(&format!(" {} |", r.gpu));
        }
        table.push('\n');
    }
    table
}

/// summary.md and the sweep's report.html with every job's row.
fn write_summary(dir: &Path, rows: &[JobRow]) {
    let jobs: Vec<SweepJob> = rows
        .iter()
        .map(|r| {
            let (status, error) = match r.status.split_once(": ") {
                Some((s, e)) => (s.to_string(), Some(e.to_string())),
                None => (r.status.clone(), None),
            };
            SweepJob {
                overrides: r.args.clone(),
                num: r.num,
                status,
                error,
                dir: (!r.dir.is_empty()).then(|| PathBuf::from(&r.dir)),
                gpu: (!r.gpu.is_empty()).then(|| r.gpu.clone()),
            }
        })
        .collect();
    crate::report::html::write_sweep_files(dir, &jobs);
}

/// The rows of `results` (one per planned job), a running job recorded as `running_status`.
fn rows(plan: &SweepPlan, results: &[JobResult], running_status: &str) -> Vec<JobRow> {
    results
        .iter()
        .map(|r| JobRow {
            num: r.num,
            overrides: plan
                .job(r.num)
                .map(|j| j.overrides.join(" "))
                .unwrap_or_default(),
            args: plan
                .job(r.num)
                .map(|j| j.overrides.clone())
                .unwrap_or_default(),
            status: match (r.state, &r.reason) {
                (JobState::Succeeded, _) => "succeeded".into(),
                (JobState::Failed, Some(why)) => format!("failed: {why}"),
                (JobState::Failed, None) => "failed".into(),
                (JobState::Interrupted, Some(why)) => format!("interrupted: {why}"),
                (JobState::Interrupted, None) => "interrupted".into(),
                (JobState::Running, _) => running_status.into(),
                (JobState::Pending, _) => "not started".into(),
            },
            // Relative to where llmprof was started when inside it, as the sweep dir was given.
            dir: r
                .run_dir
                .as_ref()
                .map(|d| d.strip_prefix(&plan.cwd).unwrap_or(d).display().to_string())
                .unwrap_or_default(),
            gpu: r.gpu.clone().unwrap_or_default(),
        })
        .collect()
}

/// The sweep as the process around the launcher sees it: the latest state of every job (for
/// the summary a signal may force), and the in-process runner of the basic launcher.
struct SweepHost {
    command: String,
    launcher: &'static str,
    /// Every planned job's result, updated as the launcher reports.
    all: Arc<Mutex<Vec<JobResult>>>,
}

impl Host for SweepHost {
    fn interrupted(&self) -> Option<i32> {
        shutdown::interrupted()
    }

    fn set_cancel(&self, cancel: Option<Cancel>) {
        shutdown::set_sweep_cancel(cancel);
    }

    fn record(&self, results: &[JobResult]) {
        let mut all = self.all.lock().unwrap_or_else(|e| e.into_inner());
        for r in results {
            if let Some(slot) = all.iter_mut().find(|a| a.num == r.num) {
                *slot = r.clone();
            }
        }
    }

    fn run_here(&self, plan: &SweepPlan, job: &PlannedJob) -> JobResult {
        let req = job_request(plan, &job.overrides);
        let origin = JobOrigin {
            launched_by: LaunchedBy {
                launcher: Some(self.launcher.to_string()),
                slurm_job_id: None,
            },
            sweep_job: Some((plan.sweep_dir.clone(), job.num)),
        };
        let outcome = plan
            .now()
            .and_then(|now| config::compose_at(&req, now).map_err(anyhow::Error::from))
            .and_then(|mut c| {
                c.mark_multirun_job(job.num);
                let sub = c.hydra_dir("sweep.subdir")?;
                tracing::info!("#{} : {}", job.num, job.overrides.join(" "));
                run_one(&self.command, &req, &c, &plan.sweep_dir.join(sub), &origin)
            });
        match outcome {
            Ok((dir, state)) => JobResult {
                num: job.num,
                state: match state {
                    RunState::Succeeded => JobState::Succeeded,
                    RunState::Interrupted => JobState::Interrupted,
                    _ => JobState::Failed,
                },
                reason: None,
                gpu: gpu_of(&dir),
                run_dir: Some(dir),
            },
            Err(e) => JobResult::failed(job.num, format!("{e:#}")),
        }
    }
}

/// The launcher chosen in the composed `hydra.launcher` node (basic when there is none).
fn launcher_conf(master: &Composed) -> Result<LauncherConf> {
    let mut c = master.clone();
    // `hydra.sweep.subdir` refers to the job number: any job's will do to resolve the launcher.
    c.mark_multirun_job(0);
    let hydra = c.resolved_hydra()?;
    LauncherConf::from_node(
        hydra
            .get_path("launcher")
            .map(|n| n.to_serde_json())
            .as_ref(),
    )
}

pub fn run(command: &str, req: ComposeRequest, resume: Option<&Path>) -> Result<i32> {
    let (plan, launcher, nums) = match resume {
        None => start(command, &req)?,
        Some(dir) => resume_plan(command, &req, dir)?,
    };
    let host = SweepHost {
        command: command.to_string(),
        launcher: launcher.name(),
        all: Arc::new(Mutex::new(
            plan.jobs
                .iter()
                .map(|j| match nums.contains(&j.num) {
                    true => JobResult::pending(j.num),
                    // A resumed sweep's jobs that already succeeded keep their result.
                    false => observe(&plan.sweep_dir, j.num)
                        .final_result(j.num)
                        .unwrap_or_else(|| JobResult::pending(j.num)),
                })
                .collect(),
        )),
    };
    {
        // If the signal thread must finish alone, it still writes the summary.
        let (all, plan) = (host.all.clone(), plan.clone());
        shutdown::set_sweep_summary(Some(Box::new(move |status: &str| {
            let all = all.lock().unwrap_or_else(|e| e.into_inner());
            write_summary(&plan.sweep_dir, &rows(&plan, &all, status));
        })));
    }
    tracing::info!(
        jobs = nums.len(),
        launcher = launcher.name(),
        dir = %plan.sweep_dir.display(),
        "multirun"
    );
    // Jobs whose config does not compose fail here, before anything is launched.
    let mut launchable = Vec::new();
    for &num in &nums {
        let job = plan.job(num)?;
        match config::compose_at(&job_request(&plan, &job.overrides), plan.now()?) {
            Ok(_) => launchable.push(num),
            Err(e) => host.record(&[JobResult::failed(num, format!("{e:#}"))]),
        }
    }
    let launched = crate::launcher::for_conf(&launcher).launch(&plan, &launchable, &host);
    shutdown::set_sweep_summary(None);
    shutdown::set_sweep_cancel(None);
    let launched = launched?;
    host.record(&launched);
    let all = host.all.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let final_rows = rows(&plan, &all, "interrupted");
    write_summary(&plan.sweep_dir, &final_rows);
    crate::stdout::println(&summary_table(&final_rows))?;
    if shutdown::interrupted().is_some() {
        return Ok(run_exit_code(RunState::Interrupted));
    }
    let failed = all
        .iter()
        .filter(|r| r.state != JobState::Succeeded)
        .count();
    Ok(if failed == 0 { 0 } else { 1 })
}

/// A new sweep: expand, create the sweep directory, write multirun.yaml and the plan.
fn start(command: &str, req: &ComposeRequest) -> Result<(SweepPlan, LauncherConf, Vec<usize>)> {
    let now = chrono::Local::now();
    let master = config::compose_at(req, now)?;
    let launcher = launcher_conf(&master)?;
    let jobs = sweep::expand(&req.config_dir, &master.parsed_overrides)?;
    let sweep_dir: PathBuf = create_fresh_dir(&master.hydra_dir("sweep.dir")?, "hydra.sweep.dir")?;
    let sweep_dir = std::fs::canonicalize(&sweep_dir)
        .with_context(|| format!("resolving {}", sweep_dir.display()))?;
    write_atomic(
        &sweep_dir.join(crate::report::artifacts::MULTIRUN_YAML),
        &master.full_config(false)?.to_yaml(),
    )?;
    let plan = SweepPlan {
        command: command.to_string(),
        config_dir: std::fs::canonicalize(&req.config_dir).unwrap_or(req.config_dir.clone()),
        config_name: req.config_name.clone(),
        job_name: req.job_name.clone(),
        overrides: req.overrides.clone(),
        now: now.to_rfc3339(),
        cwd: std::env::current_dir().context("reading the current directory")?,
        launcher: launcher.name().to_string(),
        jobs: jobs
            .into_iter()
            .enumerate()
            .map(|(num, overrides)| PlannedJob { num, overrides })
            .collect(),
        sweep_dir,
    };
    plan.write()?;
    let nums = (0..plan.jobs.len()).collect();
    Ok((plan, launcher, nums))
}

/// `--resume SWEEP_DIR`: the sweep's own plan; the command line may only choose the launcher
/// (`hydra/launcher=…`, `hydra.launcher.*=…`), never change a job.
fn resume_plan(
    command: &str,
    req: &ComposeRequest,
    dir: &Path,
) -> Result<(SweepPlan, LauncherConf, Vec<usize>)> {
    let dir = std::fs::canonicalize(dir)
        .with_context(|| format!("--resume {}: no such sweep directory", dir.display()))?;
    let mut plan = SweepPlan::read(&dir)?;
    if plan.command != command {
        bail!(
            "--resume {}: that sweep ran `{}`, not `{command}`\n  fix: llmprof {} -m --resume {}",
            dir.display(),
            plan.command,
            plan.command,
            dir.display()
        );
    }
    if let Some(bad) = req
        .overrides
        .iter()
        .find(|o| !o.starts_with("hydra/launcher") && !o.starts_with("hydra.launcher"))
    {
        bail!(
            "--resume keeps the sweep's jobs as they were: '{bad}' cannot be given\n  fix: only hydra/launcher=… and hydra.launcher.*=… may follow --resume; start a new sweep to change jobs"
        );
    }
    let mut overrides = plan.overrides.clone();
    overrides.extend(req.overrides.iter().cloned());
    let master = config::compose_at(
        &ComposeRequest {
            overrides,
            multirun: true,
            ..job_request(&plan, &[])
        },
        plan.now()?,
    )?;
    let launcher = launcher_conf(&master)?;
    let last: Vec<(usize, Option<RunState>)> = plan
        .jobs
        .iter()
        .map(|j| (j.num, observe(&dir, j.num).state()))
        .collect();
    let nums = select_for_resume(&last);
    tracing::info!(
        again = nums.len(),
        of = plan.jobs.len(),
        "resuming {}",
        dir.display()
    );
    plan.launcher = launcher.name().to_string();
    plan.write()?;
    Ok((plan, launcher, nums))
}
