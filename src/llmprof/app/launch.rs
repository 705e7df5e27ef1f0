//! Running a workload stage (stage1, stage2, infer): compose → typed spec → fresh run directory
//! → `llmprof-worker` (the libtorch side) → status. Multirun runs the expanded jobs one after
//! another, each in its own folder under the sweep directory, then prints a summary table.
use crate::config::{self, sweep, ComposeRequest, Composed};
use crate::run_dir::{RunDir, RunState};
use crate::spec::RunSpec;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The run being executed, for the Ctrl-C handler.
static CURRENT_RUN: Mutex<Option<PathBuf>> = Mutex::new(None);

fn install_interrupt_handler() {
    let _ = ctrlc::set_handler(|| {
        if let Ok(g) = CURRENT_RUN.lock() {
            if let Some(p) = g.as_ref() {
                let _ = RunDir { path: p.clone() }.finish(
                    RunState::Interrupted,
                    Some("interrupted by the user (Ctrl-C); files written so far are kept".into()),
                );
                eprintln!("\ninterrupted: run directory kept at {}", p.display());
            }
        }
        std::process::exit(130);
    });
}

pub fn run(command: &str, req: ComposeRequest) -> Result<i32> {
    install_interrupt_handler();
    if req.multirun {
        return run_multirun(command, req);
    }
    let composed = config::compose(&req)?;
    let dir = composed.hydra_dir("run.dir")?;
    let outcome = run_one(command, &req, &composed, &dir)?;
    Ok(if outcome.1 == RunState::Succeeded {
        0
    } else {
        1
    })
}

/// One run: returns its directory and final state.
fn run_one(
    command: &str,
    req: &ComposeRequest,
    composed: &Composed,
    wanted_dir: &Path,
) -> Result<(PathBuf, RunState)> {
    let mut resolved = composed.resolved_job()?;
    let cwd = std::env::current_dir().context("reading the current directory")?;
    crate::spec::data_paths::make_absolute(&mut resolved, &cwd, Some(&composed_base_dir(composed)));
    // Validate before creating anything: a typo never leaves an empty run folder behind.
    let spec = RunSpec::from_tree(&resolved)?;
    if command == "stage2" && !spec.pipeline.nsys.enable && !spec.pipeline.ncu.enable {
        bail!("stage2 needs a profiler: add pipeline.nsys.enable=true and/or pipeline.ncu.enable=true");
    }
    let dir = RunDir::create(wanted_dir, composed, &resolved, command)?;
    crate::logging::log_to_file(&dir.path.join(crate::run_dir::LOG_FILE))
        .with_context(|| format!("opening the log in {}", dir.path.display()))?;
    *CURRENT_RUN.lock().expect("not poisoned") = Some(dir.path.clone());
    tracing::info!(dir = %dir.path.display(), "{command}: run directory");
    let result = if command == "stage2" {
        let name = req.config_name.trim_end_matches(".yaml");
        super::nsight_stage::Stage2::new(&spec, composed, &dir.path, &req.config_dir, name).run()
    } else {
        launch_worker(command, &dir.path)
    };
    let state = match &result {
        Ok(()) => {
            dir.finish(RunState::Succeeded, None)?;
            tracing::info!(dir = %dir.path.display(), "{command} succeeded");
            RunState::Succeeded
        }
        Err(e) => {
            let msg = format!("{e:#}");
            dir.finish(RunState::Failed, Some(msg.clone()))?;
            tracing::error!("{command} failed: {msg}");
            eprintln!(
                "run directory (kept, marked failed): {}",
                dir.path.display()
            );
            RunState::Failed
        }
    };
    *CURRENT_RUN.lock().expect("not poisoned") = None;
    Ok((dir.path, state))
}

/// The repository holding the config directory: relative data paths (datasets/…, models/…)
/// are read from there when they do not exist in the current directory.
fn composed_base_dir(composed: &Composed) -> PathBuf {
    match composed.primary_config_dir() {
        Some(conf) => conf.parent().map(Path::to_path_buf).unwrap_or_default(),
        None => PathBuf::from("."),
    }
}

/// The workload binary next to this one (or `LLMPROF_WORKER`).
pub fn worker_path() -> Result<PathBuf> {
    if let Ok(p) = std::env::var("LLMPROF_WORKER") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().context("locating the llmprof binary")?;
    Ok(exe.with_file_name("llmprof-worker"))
}

fn launch_worker(command: &str, run_dir: &Path) -> Result<()> {
    let worker = worker_path()?;
    if !worker.is_file() {
        bail!(
            "the workload binary {} is missing\n  fix: build it with ./bootstrap.sh --yes (or cargo build --release with LIBTORCH_USE_PYTORCH=1)",
            worker.display()
        );
    }
    let status = std::process::Command::new(&worker)
        .arg(command)
        .arg(run_dir)
        .status()
        .with_context(|| format!("starting {}", worker.display()))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(127) => bail!(
            "{} could not start (exit 127): libtorch was not found\n  fix: run ./bootstrap.sh --yes (installs torch==2.11.0 into .venv), or put torch/lib on LD_LIBRARY_PATH",
            worker.display()
        ),
        Some(c) => {
            let detail = std::fs::read_to_string(run_dir.join(crate::run_dir::WORKER_ERROR)).unwrap_or_default();
            bail!("the workload exited with status {c}: {} (log: {}/llmprof.log)", detail.trim(), run_dir.display())
        }
        None => bail!("the workload was killed by a signal (see {}/llmprof.log)", run_dir.display()),
    }
}

fn run_multirun(command: &str, req: ComposeRequest) -> Result<i32> {
    let now = chrono::Local::now();
    let master = config::compose_at(&req, now)?;
    let jobs = sweep::expand(&req.config_dir, &master.parsed_overrides)?;
    let sweep_dir = master.hydra_dir("sweep.dir")?;
    std::fs::create_dir_all(&sweep_dir)
        .with_context(|| format!("creating {}", sweep_dir.display()))?;
    std::fs::write(
        sweep_dir.join("multirun.yaml"),
        master.full_config(false)?.to_yaml(),
    )
    .with_context(|| format!("writing {}/multirun.yaml", sweep_dir.display()))?;
    tracing::info!(jobs = jobs.len(), dir = %sweep_dir.display(), "multirun");
    let mut rows = Vec::new();
    for (num, overrides) in jobs.iter().enumerate() {
        let job_req = ComposeRequest {
            overrides: overrides.clone(),
            multirun: false,
            ..req.clone()
        };
        let outcome = config::compose_at(&job_req, now).map(|mut c| {
            c.mark_multirun_job(num);
            c
        });
        let row = match outcome {
            Ok(c) => {
                let sub = c.hydra_dir("sweep.subdir")?;
                tracing::info!("#{num} : {}", overrides.join(" "));
                match run_one(command, &job_req, &c, &sweep_dir.join(sub)) {
                    Ok((dir, state)) => (
                        num,
                        overrides.join(" "),
                        format!("{state:?}").to_lowercase(),
                        dir.display().to_string(),
                    ),
                    Err(e) => (
                        num,
                        overrides.join(" "),
                        format!("failed: {e:#}"),
                        String::new(),
                    ),
                }
            }
            Err(e) => (
                num,
                overrides.join(" "),
                format!("failed: {e:#}"),
                String::new(),
            ),
        };
        rows.push(row);
    }
    let mut table = String::from("| job | overrides | status | directory |\n|---|---|---|---|\n");
    for (n, o, s, d) in &rows {
        table.push_str(&format!("| {n} | `{o}` | {s} | {d} |\n"));
    }
    std::fs::write(sweep_dir.join("summary.md"), &table)?;
    println!("{table}");
    let failed = rows.iter().filter(|r| r.2 != "succeeded").count();
    Ok(if failed == 0 { 0 } else { 1 })
}
