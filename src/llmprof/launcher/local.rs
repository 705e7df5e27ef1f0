//! `hydra/launcher=local`: up to N jobs at once on this machine, each an `llmprof __job` process
//! (its own process group, output in `.llmprof/logs/<num>.log`) with its own GPU through
//! `CUDA_VISIBLE_DEVICES` (gpus.rs). A signal is forwarded to every running job, which marks its
//! run interrupted; jobs not started are left so, and a job that ignores it is killed.
use super::conf::LocalConf;
use super::observe::{log_tail, observe, settle};
use super::progress::Progress;
use super::{gpus, Host, JobResult, JobState, Launcher, SweepPlan};
use anyhow::{Context, Result};
use std::collections::VecDeque;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a job may take to stop after the forwarded signal before it is killed.
const KILL_AFTER: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(200);

pub struct Local {
    pub conf: LocalConf,
}

struct Running {
    index: usize,
    slot: usize,
    child: Child,
}

impl Launcher for Local {
    fn launch(&self, plan: &SweepPlan, nums: &[usize], host: &dyn Host) -> Result<Vec<JobResult>> {
        let slots = gpus::slots(&self.conf, &gpus::visible())?;
        tracing::info!(
            jobs_at_once = slots.len(),
            gpus = ?slots.iter().flatten().collect::<Vec<_>>(),
            "local launcher"
        );
        let exe = std::env::current_exe().context("locating the llmprof binary")?;
        std::fs::create_dir_all(plan.log_path(0).parent().expect("logs folder"))
            .context("creating the sweep's log folder")?;
        let mut results: Vec<JobResult> = nums.iter().map(|&n| JobResult::pending(n)).collect();
        let mut queue: VecDeque<usize> = (0..nums.len()).collect();
        let mut free: Vec<usize> = (0..slots.len()).rev().collect();
        let mut running: Vec<Running> = Vec::new();
        let pids: Arc<Mutex<Vec<u32>>> = Arc::default();
        {
            let pids = pids.clone();
            host.set_cancel(Some(Box::new(move |sig| {
                for &pid in pids.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                    // SAFETY: kill(2) on a child we spawned, with a standard signal.
                    unsafe { libc::kill(pid as i32, sig) };
                }
            })));
        }
        let mut progress = Progress::new(nums.len(), "local");
        let mut interrupted_at: Option<Instant> = None;
        loop {
            if host.interrupted().is_some() {
                interrupted_at.get_or_insert_with(Instant::now);
            }
            while interrupted_at.is_none() && !free.is_empty() && !queue.is_empty() {
                let (slot, index) = (
                    free.pop().expect("checked"),
                    queue.pop_front().expect("checked"),
                );
                let num = nums[index];
                match spawn(&exe, plan, num, slots[slot].as_deref()) {
                    Ok(child) => {
                        pids.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(child.id());
                        results[index].state = JobState::Running;
                        running.push(Running { index, slot, child });
                    }
                    Err(e) => {
                        results[index] = JobResult::failed(num, format!("{e:#}"));
                        free.push(slot);
                    }
                }
            }
            let mut still = Vec::new();
            for mut r in running.drain(..) {
                match r.child.try_wait() {
                    Ok(None) => still.push(r),
                    done => {
                        let num = nums[r.index];
                        pids.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .retain(|&p| p != r.child.id());
                        results[r.index] =
                            finished(plan, num, done.ok().flatten(), interrupted_at.is_some());
                        free.push(r.slot);
                    }
                }
            }
            running = still;
            if let Some(t) = interrupted_at {
                if t.elapsed() > KILL_AFTER {
                    for r in running.iter_mut() {
                        let _ = r.child.kill();
                    }
                }
            }
            host.record(&results);
            progress.update(&results);
            if running.is_empty() && (queue.is_empty() || interrupted_at.is_some()) {
                break;
            }
            std::thread::sleep(POLL);
        }
        host.set_cancel(None);
        progress.finish();
        Ok(results)
    }
}

fn spawn(exe: &std::path::Path, plan: &SweepPlan, num: usize, gpu: Option<&str>) -> Result<Child> {
    let log_path = plan.log_path(num);
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    let mut cmd = Command::new(exe);
    cmd.arg("__job")
        .arg(&plan.sweep_dir)
        .arg(num.to_string())
        .current_dir(&plan.cwd)
        .stdin(Stdio::null())
        .stdout(log.try_clone().context("duplicating the log handle")?)
        .stderr(log)
        // Its own process group: a terminal's Ctrl-C reaches this process only, which forwards it once.
        .process_group(0);
    if let Some(g) = gpu {
        cmd.env("CUDA_VISIBLE_DEVICES", g);
    }
    cmd.spawn()
        .with_context(|| format!("starting job {num}: {}", exe.display()))
}

/// A job whose process has exited: its status.json says how it ended; without one, its exit
/// status and the end of its log do.
fn finished(
    plan: &SweepPlan,
    num: usize,
    status: Option<std::process::ExitStatus>,
    interrupted: bool,
) -> JobResult {
    let seen = observe(&plan.sweep_dir, num);
    if let Some(r) = seen.final_result(num) {
        return r;
    }
    if interrupted {
        return seen.result(
            num,
            JobState::Interrupted,
            Some("stopped by a signal".into()),
        );
    }
    let how = match status {
        Some(s) if s.code().is_some() => format!("exited with status {}", s.code().unwrap_or(1)),
        Some(s) => format!("was killed by signal {}", s.signal().unwrap_or(0)),
        None => "could not be waited for".into(),
    };
    let log = plan.log_path(num);
    let tail = log_tail(&log).unwrap_or_default();
    let reason = format!(
        "the job process {how} without a final status.json: {tail} (log: {})",
        log.display()
    );
    settle(&seen, &reason);
    seen.result(num, JobState::Failed, Some(reason))
}
