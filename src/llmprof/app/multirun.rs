//! `-m`: expand the sweep, run each job in its own folder under a fresh sweep directory (never
//! reused), and write `multirun.yaml` and `summary.md` (every job's state, also when a signal
//! stops the sweep: finished jobs keep theirs, the interrupted one says so, the rest are listed as
//! not started).
use super::launch::run_one;
use super::shutdown::{self, run_exit_code};
use crate::config::{self, sweep, ComposeRequest};
use crate::report::sweep::SweepJob;
use crate::run_dir::{create_fresh_dir, write_atomic, RunState};
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One line of summary.md.
#[derive(Debug, Clone)]
struct JobRow {
    num: usize,
    overrides: String,
    status: String,
    dir: String,
}

fn summary_table(rows: &[JobRow]) -> String {
    let mut table = String::from("| job | overrides | status | directory |\n|---|---|---|---|\n");
    for r in rows {
        table.push_str(&format!(
            "| {} | `{}` | {} | {} |\n",
            r.num, r.overrides, r.status, r.dir
        ));
    }
    table
}

/// summary.md with the finished rows, the running job (`running_status`) and the jobs not started.
fn write_summary(dir: &Path, rows: &[JobRow], jobs: &[Vec<String>], running_status: &str) {
    let mut all = rows.to_vec();
    for (num, overrides) in jobs.iter().enumerate().skip(rows.len()) {
        all.push(JobRow {
            num,
            overrides: overrides.join(" "),
            status: if num == rows.len() {
                running_status.to_string()
            } else {
                "not started".into()
            },
            dir: String::new(),
        });
    }
    let jobs: Vec<SweepJob> = all
        .into_iter()
        .map(|r| {
            let (status, error) = match r.status.split_once(": ") {
                Some((s, e)) => (s.to_string(), Some(e.to_string())),
                None => (r.status, None),
            };
            SweepJob {
                overrides: jobs.get(r.num).cloned().unwrap_or_default(),
                num: r.num,
                status,
                error,
                dir: (!r.dir.is_empty()).then(|| PathBuf::from(r.dir)),
            }
        })
        .collect();
    crate::report::html::write_sweep_files(dir, &jobs);
}

pub fn run(command: &str, req: ComposeRequest) -> Result<i32> {
    let now = chrono::Local::now();
    let master = config::compose_at(&req, now)?;
    let jobs = sweep::expand(&req.config_dir, &master.parsed_overrides)?;
    let sweep_dir: PathBuf = create_fresh_dir(&master.hydra_dir("sweep.dir")?, "hydra.sweep.dir")?;
    write_atomic(
        &sweep_dir.join("multirun.yaml"),
        &master.full_config(false)?.to_yaml(),
    )?;
    tracing::info!(jobs = jobs.len(), dir = %sweep_dir.display(), "multirun");
    let rows: Arc<Mutex<Vec<JobRow>>> = Arc::default();
    {
        // If the signal thread must finish alone, it still writes the summary.
        let (rows, jobs, dir) = (rows.clone(), jobs.clone(), sweep_dir.clone());
        shutdown::set_sweep_summary(Some(Box::new(move |status: &str| {
            let rows = rows.lock().unwrap_or_else(|e| e.into_inner());
            write_summary(&dir, &rows, &jobs, status);
        })));
    }
    for (num, overrides) in jobs.iter().enumerate() {
        if shutdown::interrupted().is_some() {
            break;
        }
        let job_req = ComposeRequest {
            overrides: overrides.clone(),
            multirun: false,
            ..req.clone()
        };
        let outcome = config::compose_at(&job_req, now)
            .map_err(anyhow::Error::from)
            .and_then(|mut c| {
                c.mark_multirun_job(num);
                let sub = c.hydra_dir("sweep.subdir")?;
                tracing::info!("#{num} : {}", overrides.join(" "));
                run_one(command, &job_req, &c, &sweep_dir.join(sub))
            });
        let (status, dir) = match outcome {
            Ok((dir, state)) => (
                format!("{state:?}").to_lowercase(),
                dir.display().to_string(),
            ),
            Err(e) => (format!("failed: {e:#}"), String::new()),
        };
        rows.lock().unwrap_or_else(|e| e.into_inner()).push(JobRow {
            num,
            overrides: overrides.join(" "),
            status,
            dir,
        });
    }
    shutdown::set_sweep_summary(None);
    let rows = rows.lock().unwrap_or_else(|e| e.into_inner()).clone();
    write_summary(&sweep_dir, &rows, &jobs, "not started");
    crate::stdout::println(&summary_table(&rows))?;
    if shutdown::interrupted().is_some() {
        return Ok(run_exit_code(RunState::Interrupted));
    }
    let failed = rows.iter().filter(|r| r.status != "succeeded").count();
    Ok(if failed == 0 { 0 } else { 1 })
}
