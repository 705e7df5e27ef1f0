//! The sweep's progress line (done / running / pending / failed) on stderr through indicatif,
//! hidden when stderr is not a terminal; every change of a job's state is also logged.
use super::{JobResult, JobState};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;

pub struct Progress {
    bar: ProgressBar,
    seen: HashMap<usize, JobState>,
    launcher: &'static str,
}

/// (done, running, pending, failed): done counts every final job, failed those of them that
/// did not succeed.
pub fn counts(results: &[JobResult]) -> (usize, usize, usize, usize) {
    let mut c = (0, 0, 0, 0);
    for r in results {
        match r.state {
            JobState::Pending => c.2 += 1,
            JobState::Running => c.1 += 1,
            JobState::Succeeded => c.0 += 1,
            JobState::Failed | JobState::Interrupted => {
                c.0 += 1;
                c.3 += 1
            }
        }
    }
    c
}

impl Progress {
    pub fn new(total: usize, launcher: &'static str) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} sweep ({prefix}) [{bar:30}] {pos}/{len} done · {msg}",
            )
            .expect("static template is valid")
            .progress_chars("=> "),
        );
        bar.set_prefix(launcher);
        Progress {
            bar,
            seen: HashMap::new(),
            launcher,
        }
    }

    pub fn update(&mut self, results: &[JobResult]) {
        for r in results {
            if self.seen.get(&r.num) != Some(&r.state) {
                self.seen.insert(r.num, r.state);
                if r.state != JobState::Pending {
                    self.bar.suspend(|| {
                        tracing::info!(
                            launcher = self.launcher,
                            job = r.num,
                            state = ?r.state,
                            reason = r.reason.as_deref().unwrap_or(""),
                            "sweep job"
                        )
                    });
                }
            }
        }
        let (done, running, pending, failed) = counts(results);
        self.bar.set_position(done as u64);
        self.bar.set_message(format!(
            "running {running} · pending {pending} · failed {failed}"
        ));
        self.bar.tick();
    }

    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_split_done_running_pending_failed() {
        let mut r: Vec<JobResult> = (0..5).map(JobResult::pending).collect();
        r[0].state = JobState::Succeeded;
        r[1].state = JobState::Failed;
        r[2].state = JobState::Running;
        r[3].state = JobState::Interrupted;
        assert_eq!(counts(&r), (3, 1, 1, 2));
    }
}
