//! What one array task's state is, from its run directory's status.json and Slurm's record of
//! it. Pure, so every combination is tested; waiting and timing are the follower's (mod.rs).
use super::super::JobState;
use super::state::{SlurmState, SlurmTask};
use crate::run_dir::RunState;

#[derive(Debug, Clone, PartialEq)]
pub enum Tracked {
    Pending,
    Running,
    Done(JobState, Option<String>),
    /// Neither side has a final answer yet (Slurm forgot the task, or it completed while its
    /// status.json still says running): decided after a grace period.
    Unsettled,
}

/// `run`: the state in status.json (None: no run directory yet).
pub fn classify(run: Option<RunState>, slurm: Option<&SlurmTask>) -> Tracked {
    let ended = slurm.and_then(|t| match &t.state {
        SlurmState::Ended(name) => Some((name.as_str(), t)),
        _ => None,
    });
    match run {
        Some(RunState::Succeeded) => return Tracked::Done(JobState::Succeeded, None),
        Some(RunState::Failed) => return Tracked::Done(JobState::Failed, None),
        Some(RunState::Interrupted) => {
            // A time limit or an OOM kill reaches the job as SIGTERM: Slurm's reason is the truth.
            return match ended {
                Some(("CANCELLED", _)) | None => Tracked::Done(JobState::Interrupted, None),
                Some((_, t)) => Tracked::Done(JobState::Failed, Some(slurm_reason(t))),
            };
        }
        Some(RunState::Running) | None => {}
    }
    let Some(task) = slurm else {
        return Tracked::Unsettled;
    };
    match &task.state {
        SlurmState::Pending => Tracked::Pending,
        SlurmState::Running(_) => Tracked::Running,
        SlurmState::Completed => Tracked::Unsettled,
        SlurmState::Ended(_) => {
            let mut reason = slurm_reason(task);
            if run.is_none() {
                reason.push_str("; it never created its run directory");
            }
            Tracked::Done(JobState::Failed, Some(reason))
        }
    }
}

/// "Slurm: TIMEOUT (TimeLimit): the job reached its time limit (…)".
pub fn slurm_reason(task: &SlurmTask) -> String {
    let name = match &task.state {
        SlurmState::Ended(n) => n.clone(),
        other => format!("{other:?}"),
    };
    let mut s = format!("Slurm: {name}");
    if !task.reason.is_empty() && task.reason != "None" {
        s.push_str(&format!(" ({})", task.reason));
    }
    if let Some(e) = task.state.explain() {
        s.push_str(&format!(": {e}"));
    }
    if let Some(code) = task.exit_code.as_deref().filter(|c| *c != "0:0") {
        s.push_str(&format!(", exit code {code}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(state: &str, reason: &str) -> SlurmTask {
        SlurmTask {
            task: 0,
            state: SlurmState::parse(state),
            reason: reason.into(),
            exit_code: Some("0:15".into()),
        }
    }

    #[test]
    fn the_run_directory_decides_when_it_is_final() {
        use RunState::*;
        let running = task("RUNNING", "None");
        assert_eq!(
            classify(Some(Succeeded), Some(&running)),
            Tracked::Done(JobState::Succeeded, None)
        );
        assert_eq!(
            classify(Some(Failed), None),
            Tracked::Done(JobState::Failed, None)
        );
        assert_eq!(
            classify(Some(Interrupted), None),
            Tracked::Done(JobState::Interrupted, None)
        );
        assert_eq!(
            classify(Some(Interrupted), Some(&task("CANCELLED by 0", "None"))),
            Tracked::Done(JobState::Interrupted, None)
        );
    }

    #[test]
    fn slurm_kills_are_failures_with_slurms_reason() {
        use RunState::*;
        let Tracked::Done(JobState::Failed, Some(r)) =
            classify(Some(Interrupted), Some(&task("TIMEOUT", "TimeLimit")))
        else {
            panic!()
        };
        assert_eq!(r, "Slurm: TIMEOUT (TimeLimit): the job reached its time limit (raise hydra.launcher.timeout_min), exit code 0:15");
        let Tracked::Done(JobState::Failed, Some(r)) =
            classify(Some(Running), Some(&task("OUT_OF_MEMORY", "OutOfMemory")))
        else {
            panic!()
        };
        assert!(r.starts_with("Slurm: OUT_OF_MEMORY (OutOfMemory)"), "{r}");
        let Tracked::Done(JobState::Failed, Some(r)) =
            classify(None, Some(&task("NODE_FAIL", "NodeDown")))
        else {
            panic!()
        };
        assert!(
            r.contains("node failed") && r.contains("never created its run directory"),
            "{r}"
        );
    }

    #[test]
    fn live_and_unsettled_states() {
        use RunState::*;
        assert_eq!(
            classify(None, Some(&task("PENDING", "Priority"))),
            Tracked::Pending
        );
        assert_eq!(
            classify(Some(Running), Some(&task("COMPLETING", "None"))),
            Tracked::Running
        );
        assert_eq!(
            classify(None, Some(&task("RUNNING", "None"))),
            Tracked::Running
        );
        assert_eq!(
            classify(Some(Running), Some(&task("COMPLETED", "None"))),
            Tracked::Unsettled
        );
        assert_eq!(classify(None, None), Tracked::Unsettled);
    }
}
