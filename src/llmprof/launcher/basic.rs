//! `hydra/launcher=basic` (Hydra's BasicLauncher): the jobs one after another, in this process.
//! A signal stops the sweep after the running job has been marked interrupted.
use super::{Host, JobResult, JobState, Launcher, SweepPlan};

pub struct Basic;

impl Launcher for Basic {
    fn launch(
        &self,
        plan: &SweepPlan,
        nums: &[usize],
        host: &dyn Host,
    ) -> anyhow::Result<Vec<JobResult>> {
        let mut results: Vec<JobResult> = nums.iter().map(|&n| JobResult::pending(n)).collect();
        for i in 0..nums.len() {
            if host.interrupted().is_some() {
                break;
            }
            results[i].state = JobState::Running;
            host.record(&results);
            results[i] = host.run_here(plan, plan.job(nums[i])?);
            host.record(&results);
        }
        Ok(results)
    }
}
