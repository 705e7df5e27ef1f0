//! `hydra/launcher=slurm`: one job array per launch. Writes the batch script into the sweep
//! directory (`slurm/array-<attempt>.sbatch`, kept), submits it with `sbatch --parsable`, then
//! follows every task through `squeue`/`scontrol` and its run directory until all have ended,
//! with progress on stderr. A signal cancels the array (`scancel`). A task Slurm killed (time
//! limit, OOM, node failure, cancellation) is failed with Slurm's reason, also in its
//! status.json; a task that never writes its status says the sweep directory must be shared.
pub mod script;
pub mod state;
pub mod submit;
pub mod track;

use super::conf::SlurmConf;
use super::observe::{log_tail, observe, settle, settle_interrupted};
use super::progress::Progress;
use super::{Host, JobResult, JobState, Launcher, SweepPlan};
use anyhow::{Context, Result};
use state::SlurmTask;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use track::{classify, Tracked};

/// How long to wait for the tasks to leave Slurm after `scancel` before giving up on them.
const CANCEL_WAIT: Duration = Duration::from_secs(60);

pub struct Slurm {
    pub conf: SlurmConf,
}

impl Launcher for Slurm {
    fn launch(&self, plan: &SweepPlan, nums: &[usize], host: &dyn Host) -> Result<Vec<JobResult>> {
        submit::check_tools()?;
        let settings = crate::settings::Settings::load()?;
        let site = settings.slurm();
        if let Some(bad) = site.env.keys().find(|k| !script::is_shell_variable(k)) {
            let from = crate::settings::source_of_setting(&format!("slurm.env.{bad}"));
            anyhow::bail!(
                "the setting slurm.env.{bad} ({from}) is not a shell variable name (letters, digits and _, not starting with a digit)\n  fix: rename or remove it there"
            );
        }
        let slurm_dir = plan.sweep_dir.join("slurm");
        std::fs::create_dir_all(slurm_dir.join("logs"))
            .with_context(|| format!("creating {}", slurm_dir.display()))?;
        let attempt = (1..)
            .find(|k| !slurm_dir.join(format!("array-{k}.sbatch")).exists())
            .expect("a free attempt number");
        let llmprof = match &self.conf.llmprof_bin {
            Some(p) => PathBuf::from(p),
            None => std::env::current_exe().context("locating the llmprof binary")?,
        };
        let text = script::render(&script::ScriptInput {
            conf: &self.conf,
            site,
            nums,
            sweep_dir: &plan.sweep_dir,
            cwd: &plan.cwd,
            llmprof: &llmprof,
        });
        let path = slurm_dir.join(format!("array-{attempt}.sbatch"));
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        let array = submit::sbatch(&path)?;
        std::fs::write(
            slurm_dir.join(format!("array-{attempt}.id")),
            format!("{array}\n"),
        )
        .with_context(|| format!("writing the job id into {}", slurm_dir.display()))?;
        tracing::info!(array = %array, script = %path.display(), "submitted the sweep's job array");
        {
            let array = array.clone();
            host.set_cancel(Some(Box::new(move |_sig| {
                if let Err(e) = submit::scancel(&array) {
                    tracing::error!("cancelling the job array {array}: {e:#}");
                }
            })));
        }
        let results = Follower {
            conf: &self.conf,
            plan,
            nums,
            array: &array,
        }
        .follow(host);
        host.set_cancel(None);
        Ok(results)
    }
}

struct Follower<'a> {
    conf: &'a SlurmConf,
    plan: &'a SweepPlan,
    nums: &'a [usize],
    array: &'a str,
}

impl Follower<'_> {
    fn follow(&self, host: &dyn Host) -> Vec<JobResult> {
        let poll = Duration::from_secs_f64(self.conf.poll_interval_s);
        let grace = (poll * 3).max(Duration::from_secs(20));
        let status_timeout = Duration::from_secs_f64(self.conf.status_timeout_s);
        let mut results: Vec<JobResult> =
            self.nums.iter().map(|&n| JobResult::pending(n)).collect();
        let mut running_since: HashMap<usize, Instant> = HashMap::new();
        let mut unsettled_since: HashMap<usize, Instant> = HashMap::new();
        let mut warned: HashSet<usize> = HashSet::new();
        let mut cancelled_at: Option<Instant> = None;
        let mut progress = Progress::new(self.nums.len(), "slurm");
        loop {
            if host.interrupted().is_some() && cancelled_at.is_none() {
                cancelled_at = Some(Instant::now());
                let _ = submit::scancel(self.array);
            }
            let queued: HashMap<usize, SlurmTask> = match submit::squeue(self.array) {
                Ok(tasks) => tasks.into_iter().map(|t| (t.task, t)).collect(),
                Err(e) => {
                    tracing::warn!("squeue: {e:#}");
                    HashMap::new()
                }
            };
            let mut records: Option<HashMap<usize, SlurmTask>> = None;
            for (i, &num) in self.nums.iter().enumerate() {
                if results[i].state.is_final() {
                    continue;
                }
                let seen = observe(&self.plan.sweep_dir, num);
                let task = match queued.get(&num) {
                    Some(t) => Some(t.clone()),
                    None => records
                        .get_or_insert_with(|| {
                            submit::scontrol(self.array)
                                .into_iter()
                                .map(|t| (t.task, t))
                                .collect()
                        })
                        .get(&num)
                        .cloned(),
                };
                results[i] = match classify(seen.state(), task.as_ref()) {
                    Tracked::Pending => seen.result(num, JobState::Pending, None),
                    Tracked::Running => {
                        let since = *running_since.entry(num).or_insert_with(Instant::now);
                        if seen.run_dir.is_none()
                            && since.elapsed() > status_timeout
                            && warned.insert(num)
                        {
                            tracing::warn!(
                                "job {num} (Slurm {}_{num}) has been running for {} s without writing its run directory under {}: the sweep directory must be on a filesystem the compute nodes share (see {})",
                                self.array,
                                since.elapsed().as_secs(),
                                self.plan.sweep_dir.display(),
                                self.err_log(num).display()
                            );
                        }
                        seen.result(num, JobState::Running, None)
                    }
                    // Our own scancel after a signal: interrupted, not a Slurm failure.
                    Tracked::Done(JobState::Failed, Some(_))
                        if cancelled_at.is_some()
                            && task.as_ref().is_some_and(|t| {
                                t.state == state::SlurmState::Ended("CANCELLED".into())
                            }) =>
                    {
                        let reason = format!("cancelled (scancel {})", self.array);
                        settle_interrupted(&seen, &reason);
                        seen.result(num, JobState::Interrupted, Some(reason))
                    }
                    Tracked::Done(state, reason) => {
                        if let Some(r) = &reason {
                            settle(&seen, r);
                        }
                        seen.result(num, state, reason)
                    }
                    Tracked::Unsettled => {
                        let since = *unsettled_since.entry(num).or_insert_with(Instant::now);
                        if cancelled_at.is_some() && task.is_none() {
                            seen.result(
                                num,
                                JobState::Interrupted,
                                Some(format!("cancelled (scancel {})", self.array)),
                            )
                        } else if since.elapsed() > grace {
                            let reason = self.no_status_reason(num, seen.run_dir.is_some(), grace);
                            settle(&seen, &reason);
                            seen.result(num, JobState::Failed, Some(reason))
                        } else {
                            results[i].clone()
                        }
                    }
                };
            }
            host.record(&results);
            progress.update(&results);
            if results.iter().all(|r| r.state.is_final()) {
                break;
            }
            if let Some(t) = cancelled_at {
                if t.elapsed() > CANCEL_WAIT {
                    for r in results.iter_mut().filter(|r| !r.state.is_final()) {
                        r.state = JobState::Interrupted;
                        r.reason = Some(format!(
                            "cancelled (scancel {}); Slurm had not ended it {} s later",
                            self.array,
                            CANCEL_WAIT.as_secs()
                        ));
                    }
                    break;
                }
            }
            std::thread::sleep(if cancelled_at.is_some() {
                Duration::from_secs(1).min(poll)
            } else {
                poll
            });
        }
        progress.finish();
        results
    }

    fn err_log(&self, num: usize) -> PathBuf {
        self.plan
            .sweep_dir
            .join("slurm/logs")
            .join(format!("{}_{num}.err", self.array))
    }

    fn no_status_reason(&self, num: usize, has_dir: bool, grace: Duration) -> String {
        let log = self.err_log(num);
        let tail = log_tail(&log)
            .map(|t| format!(" Its log ends: {t}"))
            .unwrap_or_default();
        let what = if has_dir {
            "its status.json still said running"
        } else {
            "it never wrote its run directory"
        };
        format!(
            "Slurm no longer runs job {num} ({}_{num}) but {what} {} s later: the sweep directory {} must be on a filesystem the compute nodes share with this host.{tail} (log: {})",
            self.array,
            grace.as_secs(),
            self.plan.sweep_dir.display(),
            log.display()
        )
    }
}
