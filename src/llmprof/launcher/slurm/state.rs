//! Slurm's view of an array's tasks, parsed from `squeue -h -r -j ID -o '%K|%T|%r'` and
//! `scontrol -o show job ID` (one record a line, `Key=Value` tokens; a pending remainder of an
//! array is one record whose ArrayTaskId is a range or list such as `2-3%2` or `1,4`). Pure.
use std::collections::BTreeMap;

/// A job state as Slurm names it (`squeue -o %T`, scontrol's `JobState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlurmState {
    Pending,
    /// RUNNING and the other states of a task still holding its node (CONFIGURING, COMPLETING,
    /// SUSPENDED, SIGNALING, STAGE_OUT, RESIZING, REQUEUED…).
    Running(String),
    Completed,
    /// Ended without success; the name is Slurm's (FAILED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL,
    /// CANCELLED, PREEMPTED, BOOT_FAIL, DEADLINE).
    Ended(String),
}

impl SlurmState {
    pub fn parse(text: &str) -> Self {
        // scontrol may write "CANCELLED by 0"; squeue may abbreviate nothing with %T.
        let word = text
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        match word.as_str() {
            "PENDING" | "PD" => SlurmState::Pending,
            "COMPLETED" | "CD" => SlurmState::Completed,
            "FAILED" | "TIMEOUT" | "OUT_OF_MEMORY" | "NODE_FAIL" | "CANCELLED" | "PREEMPTED"
            | "BOOT_FAIL" | "DEADLINE" | "F" | "TO" | "OOM" | "NF" | "CA" | "PR" | "BF" | "DL" => {
                SlurmState::Ended(long_name(&word).to_string())
            }
            _ => SlurmState::Running(word),
        }
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self, SlurmState::Completed | SlurmState::Ended(_))
    }

    /// What a user should read for a task Slurm ended (None for success and live states).
    pub fn explain(&self) -> Option<&'static str> {
        let SlurmState::Ended(name) = self else {
            return None;
        };
        Some(match name.as_str() {
            "TIMEOUT" => "the job reached its time limit (raise hydra.launcher.timeout_min)",
            "OUT_OF_MEMORY" => "the job ran out of memory (raise hydra.launcher.mem_gb)",
            "NODE_FAIL" => "the node failed",
            "CANCELLED" => "the job was cancelled (scancel)",
            "PREEMPTED" => "the job was preempted",
            "BOOT_FAIL" => "the node failed to boot",
            "DEADLINE" => "the job reached its deadline",
            _ => "the job exited with a non-zero status",
        })
    }
}

fn long_name(word: &str) -> &str {
    match word {
        "F" => "FAILED",
        "TO" => "TIMEOUT",
        "OOM" => "OUT_OF_MEMORY",
        "NF" => "NODE_FAIL",
        "CA" => "CANCELLED",
        "PR" => "PREEMPTED",
        "BF" => "BOOT_FAIL",
        "DL" => "DEADLINE",
        w => w,
    }
}

/// One array task as Slurm reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmTask {
    pub task: usize,
    pub state: SlurmState,
    /// Slurm's reason ("None", "TimeLimit", "JobArrayTaskLimit", …).
    pub reason: String,
    /// scontrol's ExitCode ("1:0" = status 1, signal 0), when known.
    pub exit_code: Option<String>,
}

/// `squeue -h -r -j ID -o '%K|%T|%r'` lines.
pub fn parse_squeue(text: &str) -> Vec<SlurmTask> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let mut parts = line.splitn(3, '|');
        let (Some(task), Some(state)) = (parts.next(), parts.next()) else {
            continue;
        };
        let reason = parts.next().unwrap_or("").trim().to_string();
        for t in expand_tasks(task.trim()) {
            out.push(SlurmTask {
                task: t,
                state: SlurmState::parse(state),
                reason: reason.clone(),
                exit_code: None,
            });
        }
    }
    out
}

/// `scontrol -o show job ID` records of an array, one task each (a pending remainder expanded).
pub fn parse_scontrol(text: &str) -> Vec<SlurmTask> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.contains("JobId=")) {
        let fields = key_values(line);
        let Some(ids) = fields.get("ArrayTaskId") else {
            continue;
        };
        let state = SlurmState::parse(fields.get("JobState").map(String::as_str).unwrap_or(""));
        let reason = fields.get("Reason").cloned().unwrap_or_default();
        for t in expand_tasks(ids) {
            out.push(SlurmTask {
                task: t,
                state: state.clone(),
                reason: reason.clone(),
                exit_code: fields.get("ExitCode").cloned(),
            });
        }
    }
    out
}

fn key_values(line: &str) -> BTreeMap<String, String> {
    line.split_whitespace()
        .filter_map(|tok| tok.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The highest array task number read from Slurm's answers: a sweep never has more jobs than the
/// composer allows (`MAX_SWEEP_JOBS`, 100,000), so larger numbers (a broken or hostile
/// `squeue`) are dropped instead of expanded into memory.
pub const MAX_TASK_ID: usize = 100_000;

/// `3`, `2-5`, `1,4,6-7`, `[2-3]`, `2-9%2` (the throttle after `%` ignored) → task numbers, at
/// most [`MAX_TASK_ID`].
pub fn expand_tasks(spec: &str) -> Vec<usize> {
    let spec = spec.split('%').next().unwrap_or("");
    let spec = spec.trim_start_matches('[').trim_end_matches(']');
    let mut out = Vec::new();
    for part in spec.split(',').filter(|p| !p.is_empty()) {
        // A step (`0-15:4`) is kept as its own range.
        let (range, step) = match part.split_once(':') {
            Some((r, s)) => (r, s.parse::<usize>().unwrap_or(1).max(1)),
            None => (part, 1),
        };
        match range.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    out.extend((a..=b.min(MAX_TASK_ID)).step_by(step));
                }
            }
            None => out.extend(range.parse::<usize>().ok().filter(|t| *t <= MAX_TASK_ID)),
        }
    }
    out
}

/// The job id `sbatch --parsable` prints ("123" or "123;cluster").
pub fn parse_sbatch_id(stdout: &str) -> Option<String> {
    let id = stdout.trim().split(';').next()?.trim();
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_digit())).then(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squeue_lines_with_array_tasks() {
        // Seen from Slurm 22.05 (slurm-wlm, Debian 12) for a 4-task array throttled to 2.
        let text = "2|PENDING|JobArrayTaskLimit\n3|PENDING|JobArrayTaskLimit\n1|RUNNING|None\n0|COMPLETING|None\n";
        let t = parse_squeue(text);
        assert_eq!(t.len(), 4);
        assert_eq!(t[0].task, 2);
        assert_eq!(t[0].state, SlurmState::Pending);
        assert_eq!(t[0].reason, "JobArrayTaskLimit");
        assert_eq!(t[2].state, SlurmState::Running("RUNNING".into()));
        assert_eq!(t[3].state, SlurmState::Running("COMPLETING".into()));
        assert!(!t[3].state.is_terminal());
        assert!(parse_squeue("\n").is_empty());
    }

    #[test]
    fn scontrol_records_and_the_pending_remainder() {
        // Abridged from `scontrol -o show job 1` on Slurm 22.05 (fields as printed).
        let text = "\
JobId=1 ArrayJobId=1 ArrayTaskId=2-3%2 ArrayTaskThrottle=2 JobName=t.sh UserId=root(0) JobState=PENDING Reason=JobArrayTaskLimit Dependency=(null) ExitCode=0:0 RunTime=00:00:00
JobId=4 ArrayJobId=1 ArrayTaskId=1 JobName=t.sh JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0
JobId=2 ArrayJobId=1 ArrayTaskId=0 JobName=t.sh JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15
JobId=5 ArrayJobId=1 ArrayTaskId=5 JobName=t.sh JobState=CANCELLED Reason=None ExitCode=0:15
JobId=6 ArrayJobId=1 ArrayTaskId=6 JobName=t.sh JobState=OUT_OF_MEMORY Reason=OutOfMemory ExitCode=0:125
slurm_load_jobs error: Invalid job id specified
";
        let t = parse_scontrol(text);
        let tasks: Vec<usize> = t.iter().map(|x| x.task).collect();
        assert_eq!(tasks, [2, 3, 1, 0, 5, 6]);
        assert_eq!(t[0].state, SlurmState::Pending);
        assert_eq!(t[2].state, SlurmState::Ended("FAILED".into()));
        assert_eq!(t[2].exit_code.as_deref(), Some("3:0"));
        assert_eq!(t[3].state, SlurmState::Ended("TIMEOUT".into()));
        assert_eq!(t[3].reason, "TimeLimit");
        assert!(t[3].state.explain().unwrap().contains("time limit"));
        assert!(t[4].state.explain().unwrap().contains("cancelled"));
        assert!(t[5].state.explain().unwrap().contains("memory"));
        assert_eq!(
            SlurmState::parse("CANCELLED by 0"),
            SlurmState::Ended("CANCELLED".into())
        );
        assert_eq!(SlurmState::parse("CD"), SlurmState::Completed);
        assert_eq!(SlurmState::Completed.explain(), None);
    }

    #[test]
    fn task_specs_and_sbatch_ids() {
        assert_eq!(expand_tasks("3"), [3]);
        assert_eq!(expand_tasks("[2-4]"), [2, 3, 4]);
        assert_eq!(expand_tasks("1,4,6-7%2"), [1, 4, 6, 7]);
        assert_eq!(expand_tasks("0-6:3"), [0, 3, 6]);
        assert!(expand_tasks("").is_empty());
        // A range no sweep can have ends at the bound instead of exhausting memory.
        let huge = expand_tasks("0-18446744073709551615");
        assert_eq!(huge.len(), MAX_TASK_ID + 1);
        assert!(expand_tasks("4294967296").is_empty());
        assert_eq!(parse_sbatch_id("1234\n").as_deref(), Some("1234"));
        assert_eq!(parse_sbatch_id("77;cluster2").as_deref(), Some("77"));
        assert_eq!(parse_sbatch_id("sbatch: error: x"), None);
    }
}
