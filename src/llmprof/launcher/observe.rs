//! What a job's files say about it: its run directory (through `.llmprof/jobs/<num>.json`), the
//! state in its status.json and the GPU in its env.json. Launchers combine this with what they
//! know of the process (an exit status, Slurm's state); nothing is written here.
use super::{plan, JobResult, JobState};
use crate::run_dir::{read_status, RunState, Status};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub run_dir: Option<PathBuf>,
    pub status: Option<Status>,
    pub gpu: Option<String>,
}

impl Observed {
    pub fn state(&self) -> Option<RunState> {
        self.status.as_ref().map(|s| s.state)
    }

    /// The job's result if its status.json has a final state.
    pub fn final_result(&self, num: usize) -> Option<JobResult> {
        let state = match self.state()? {
            RunState::Running => return None,
            RunState::Succeeded => JobState::Succeeded,
            RunState::Failed => JobState::Failed,
            RunState::Interrupted => JobState::Interrupted,
        };
        Some(self.result(num, state, None))
    }

    pub fn result(&self, num: usize, state: JobState, reason: Option<String>) -> JobResult {
        JobResult {
            num,
            state,
            reason,
            run_dir: self.run_dir.clone(),
            gpu: self.gpu.clone(),
        }
    }
}

pub fn observe(sweep_dir: &Path, num: usize) -> Observed {
    let Some(pointer) = plan::read_pointer(sweep_dir, num) else {
        return Observed::default();
    };
    let dir = pointer.run_dir;
    Observed {
        status: read_status(&dir).ok(),
        gpu: gpu_of(&dir),
        run_dir: Some(dir),
    }
}

/// Marks a run that can no longer finish by itself (its process is gone) failed with `reason`,
/// unless its status.json already says failed or succeeded.
pub fn settle(seen: &Observed, reason: &str) {
    let (Some(dir), Some(RunState::Running | RunState::Interrupted)) =
        (&seen.run_dir, seen.state())
    else {
        return;
    };
    let run = crate::run_dir::RunDir { path: dir.clone() };
    if let Err(e) = run.finish(RunState::Failed, Some(reason.to_string())) {
        tracing::warn!("could not mark {} failed: {e:#}", dir.display());
    }
}

/// Marks a run whose process was cancelled before it could say so interrupted, unless its
/// status.json already has a final state.
pub fn settle_interrupted(seen: &Observed, reason: &str) {
    let (Some(dir), Some(RunState::Running)) = (&seen.run_dir, seen.state()) else {
        return;
    };
    let run = crate::run_dir::RunDir { path: dir.clone() };
    if let Err(e) = run.finish(RunState::Interrupted, Some(reason.to_string())) {
        tracing::warn!("could not mark {} interrupted: {e:#}", dir.display());
    }
}

/// "NAME (GPU i)" from a run's env.json (`gpu.name`, `gpu_index` or `gpu.index`), if it ran on one.
pub fn gpu_of(run_dir: &Path) -> Option<String> {
    let text =
        crate::dataset::file_kind::read_to_string(run_dir.join(crate::report::artifacts::ENV_JSON))
            .ok()?;
    let env: serde_json::Value = serde_json::from_str(&text).ok()?;
    let name = env.pointer("/gpu/name")?.as_str()?;
    let index = env
        .get("gpu_index")
        .and_then(|i| i.as_u64())
        .or_else(|| env.pointer("/gpu/index").and_then(|i| i.as_u64()));
    Some(match index {
        Some(i) => format!("{name} (GPU {i})"),
        None => name.to_string(),
    })
}

/// The last lines of a log that say what went wrong (for a job that could not write its status).
pub fn log_tail(path: &Path) -> Option<String> {
    let text = crate::dataset::file_kind::read_to_string(path).ok()?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let pick = lines
        .iter()
        .rev()
        .find(|l| l.contains("Error") || l.contains("error") || l.contains("fix:"))
        .or(lines.last())?;
    // An error with a "fix:" line: keep both.
    let at = lines.iter().rposition(|l| l == pick).unwrap_or(0);
    let from = if pick.trim_start().starts_with("fix:") && at > 0 {
        at - 1
    } else {
        at
    };
    Some(
        lines[from..=at]
            .iter()
            .map(|l| l.trim())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_and_log_tail_come_from_the_files() {
        let dir = std::env::temp_dir().join(format!("llmprof-observe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(gpu_of(&dir), None);
        std::fs::write(
            dir.join("env.json"),
            r#"{"gpu": {"name": "NVIDIA H200", "index": 0}, "gpu_index": 1}"#,
        )
        .unwrap();
        assert_eq!(gpu_of(&dir).unwrap(), "NVIDIA H200 (GPU 1)");
        std::fs::write(dir.join("env.json"), r#"{"gpu": null}"#).unwrap();
        assert_eq!(gpu_of(&dir), None);
        let log = dir.join("x.log");
        std::fs::write(&log, "start\nError: no plan\n  fix: share it\n\n").unwrap();
        assert_eq!(log_tail(&log).unwrap(), "Error: no plan fix: share it");
        std::fs::write(&log, "just this\n").unwrap();
        assert_eq!(log_tail(&log).unwrap(), "just this");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
