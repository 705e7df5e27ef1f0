//! The sweep plan every launcher works from, kept in the sweep directory: `.llmprof/sweep.json`
//! (the command, config source, composition time and each job's overrides; written once by the
//! submitting `llmprof`, read by each `llmprof __job`), `.llmprof/jobs/<num>.json` (where job
//! `num`'s run directory is, written by the job as soon as it exists) and `.llmprof/logs/<num>.log`
//! (a local job's output). Also the choice of jobs a `--resume` runs again.
use crate::run_dir::RunState;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const PLAN_DIR: &str = ".llmprof";
pub const PLAN_FILE: &str = "sweep.json";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepPlan {
    pub command: String,
    /// Absolute.
    pub config_dir: PathBuf,
    pub config_name: String,
    pub job_name: String,
    /// The sweep's command line (before expansion).
    pub overrides: Vec<String>,
    /// When the sweep was composed (`${now:...}` of every job), RFC 3339.
    pub now: String,
    /// The directory llmprof was started in: jobs run there (relative data paths).
    pub cwd: PathBuf,
    /// The launcher of the latest launch (`--resume` may choose another).
    pub launcher: String,
    pub jobs: Vec<PlannedJob>,
    /// Absolute; not stored (the file is inside it).
    #[serde(skip)]
    pub sweep_dir: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedJob {
    pub num: usize,
    pub overrides: Vec<String>,
}

/// Where a job's run directory is (`.llmprof/jobs/<num>.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobPointer {
    pub run_dir: PathBuf,
}

impl SweepPlan {
    pub fn write(&self) -> Result<()> {
        std::fs::create_dir_all(self.sweep_dir.join(PLAN_DIR).join("jobs"))
            .with_context(|| format!("creating {}/{PLAN_DIR}", self.sweep_dir.display()))?;
        let text = serde_json::to_string_pretty(self).expect("the plan serialises");
        crate::run_dir::write_atomic(&self.sweep_dir.join(PLAN_DIR).join(PLAN_FILE), &text)
    }

    /// The plan of the sweep in `sweep_dir` (a job on a node that cannot read it is told why).
    pub fn read(sweep_dir: &Path) -> Result<Self> {
        let path = sweep_dir.join(PLAN_DIR).join(PLAN_FILE);
        let text = crate::dataset::file_kind::read_to_string(&path).with_context(|| {
            format!(
                "reading the sweep plan {} on host {}\n  fix: the sweep directory must be on a filesystem this machine shares with the one that started the sweep (or --resume was given a folder that is not a sweep directory)",
                path.display(),
                hostname()
            )
        })?;
        let mut plan: SweepPlan = serde_json::from_str(&text)
            .with_context(|| format!("parsing the sweep plan {}", path.display()))?;
        plan.sweep_dir = sweep_dir.to_path_buf();
        Ok(plan)
    }

    pub fn job(&self, num: usize) -> Result<&PlannedJob> {
        match self.jobs.iter().find(|j| j.num == num) {
            Some(j) => Ok(j),
            None => bail!(
                "the sweep {} has no job {num} (jobs 0..{})",
                self.sweep_dir.display(),
                self.jobs.len()
            ),
        }
    }

    pub fn now(&self) -> Result<chrono::DateTime<chrono::Local>> {
        chrono::DateTime::parse_from_rfc3339(&self.now)
            .map(|t| t.with_timezone(&chrono::Local))
            .with_context(|| format!("the sweep plan's time '{}'", self.now))
    }

    pub fn pointer_path(&self, num: usize) -> PathBuf {
        pointer_path(&self.sweep_dir, num)
    }

    pub fn log_path(&self, num: usize) -> PathBuf {
        self.sweep_dir
            .join(PLAN_DIR)
            .join("logs")
            .join(format!("{num}.log"))
    }
}

pub fn pointer_path(sweep_dir: &Path, num: usize) -> PathBuf {
    sweep_dir
        .join(PLAN_DIR)
        .join("jobs")
        .join(format!("{num}.json"))
}

/// Records where job `num`'s run directory is.
pub fn write_pointer(sweep_dir: &Path, num: usize, run_dir: &Path) -> Result<()> {
    let abs = std::fs::canonicalize(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
    let text = serde_json::to_string(&JobPointer { run_dir: abs }).expect("serialises");
    let path = pointer_path(sweep_dir, num);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    crate::run_dir::write_atomic(&path, &text)
}

pub fn read_pointer(sweep_dir: &Path, num: usize) -> Option<JobPointer> {
    let text = crate::dataset::file_kind::read_to_string(pointer_path(sweep_dir, num)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The jobs a `--resume` runs again: every job whose last run did not succeed (failed,
/// interrupted, never started, or left `running` by a process that is gone), in job order.
pub fn select_for_resume(last: &[(usize, Option<RunState>)]) -> Vec<usize> {
    let mut nums: Vec<usize> = last
        .iter()
        .filter(|(_, s)| *s != Some(RunState::Succeeded))
        .map(|(n, _)| *n)
        .collect();
    nums.sort_unstable();
    nums.dedup();
    nums
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "this host".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_runs_every_job_that_did_not_succeed() {
        use RunState::*;
        let last = [
            (3, None),
            (0, Some(Succeeded)),
            (1, Some(Failed)),
            (2, Some(Interrupted)),
            (4, Some(Running)),
            (5, Some(Succeeded)),
        ];
        assert_eq!(select_for_resume(&last), vec![1, 2, 3, 4]);
        assert!(select_for_resume(&[(0, Some(Succeeded))]).is_empty());
    }

    #[test]
    fn plans_and_pointers_round_trip_and_a_missing_plan_says_why() {
        let dir = std::env::temp_dir().join(format!("llmprof-plan-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let err = SweepPlan::read(&dir).unwrap_err();
        assert!(format!("{err:#}").contains("shares"), "{err:#}");
        let plan = SweepPlan {
            command: "stage1".into(),
            config_dir: "/c".into(),
            config_name: "config".into(),
            job_name: "stage1".into(),
            overrides: vec!["a=1,2".into()],
            now: chrono::Local::now().to_rfc3339(),
            cwd: "/".into(),
            launcher: "local".into(),
            jobs: vec![PlannedJob {
                num: 0,
                overrides: vec!["a=1".into()],
            }],
            sweep_dir: dir.clone(),
        };
        plan.write().unwrap();
        let back = SweepPlan::read(&dir).unwrap();
        assert_eq!(back.jobs, plan.jobs);
        assert_eq!(back.sweep_dir, dir);
        assert!(back.now().is_ok());
        assert!(back.job(1).is_err());
        assert!(read_pointer(&dir, 0).is_none());
        write_pointer(&dir, 0, &dir).unwrap();
        assert_eq!(
            read_pointer(&dir, 0).unwrap().run_dir,
            dir.canonicalize().unwrap()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
