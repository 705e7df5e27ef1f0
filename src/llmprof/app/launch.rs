//! Running a workload stage (stage1, stage2, infer): compose → typed spec → fresh run directory
//! → `llmprof-worker` (the libtorch side) → status. A signal ends the run as `interrupted` (see
//! `shutdown`); a multirun is `multirun.rs`.
use super::child;
use super::shutdown::{self, run_exit_code, Interrupted};
use crate::config::{self, ComposeRequest, Composed};
use crate::run_dir::{LaunchedBy, RunDir, RunState};
use crate::spec::RunSpec;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

pub fn run(command: &str, req: ComposeRequest) -> Result<i32> {
    let composed = config::compose(&req)?;
    let dir = composed.hydra_dir("run.dir")?;
    let outcome = run_one(command, &req, &composed, &dir, &JobOrigin::default())?;
    Ok(run_exit_code(outcome.1))
}

/// Where a run belongs when it is a sweep's job: recorded in its status.json, and its directory
/// recorded in the sweep (`launcher::plan::write_pointer`) as soon as it exists.
#[derive(Debug, Clone, Default)]
pub struct JobOrigin {
    pub launched_by: LaunchedBy,
    /// The sweep directory and the job's number.
    pub sweep_job: Option<(PathBuf, usize)>,
}

/// One run: returns its directory and final state.
pub fn run_one(
    command: &str,
    req: &ComposeRequest,
    composed: &Composed,
    wanted_dir: &Path,
    origin: &JobOrigin,
) -> Result<(PathBuf, RunState)> {
    let mut resolved = composed.resolved_job()?;
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let repo = composed_base_dir(composed);
    crate::spec::data_paths::make_absolute(&mut resolved, &cwd, Some(&repo));
    let settings = crate::settings::Settings::load()?;
    let task = crate::config::Node::List(vec![]);
    let task: Vec<String> = match composed.hydra.get_path("overrides.task").unwrap_or(&task) {
        crate::config::Node::List(items) => items.iter().map(|o| o.to_python_str()).collect(),
        _ => vec![],
    };
    if let Some(device) = crate::settings::apply_default_device(&mut resolved, &task, &settings) {
        tracing::info!(device, "device: auto -> settings defaults.device");
    }
    // dataset.variant and model.weights=hub: the data the worker reads, ready before it starts.
    super::data_prep::prepare(&mut resolved, &cwd, &repo)?;
    // model=hf: the family and architecture from the checkpoint's config.json.
    crate::model::hf_checkpoint::resolve(&mut resolved)?;
    // Validate before creating anything: a typo never leaves an empty run folder behind.
    let spec = RunSpec::from_tree(&resolved)?;
    if spec.model.weights != crate::spec::WeightsSource::Synthetic {
        crate::model::checkpoint_config::check(&spec.model.arch, Path::new(&spec.model.path))?;
    }
    let ranks = super::tp_launch::placement(&spec, command)?;
    if command == "stage2" && !spec.pipeline.nsys.enable && !spec.pipeline.ncu.enable {
        bail!("stage2 needs a profiler: add pipeline.nsys.enable=true and/or pipeline.ncu.enable=true");
    }
    let dir = RunDir::create(
        wanted_dir,
        composed,
        &resolved,
        command,
        &origin.launched_by,
    )?;
    if let Some((sweep_dir, num)) = &origin.sweep_job {
        crate::launcher::plan::write_pointer(sweep_dir, *num, &dir.path)?;
    }
    if crate::logging::wants_log_file(composed.hydra.child("job_logging")) {
        crate::logging::log_to_file(&dir.path.join(crate::run_dir::LOG_FILE))
            .with_context(|| format!("opening the log in {}", dir.path.display()))?;
    }
    shutdown::set_run(Some(dir.path.clone()));
    tracing::info!(dir = %dir.path.display(), "{command}: run directory");
    let result = if command == "stage2" {
        let name = req.config_name.trim_end_matches(".yaml");
        super::nsight_stage::Stage2::new(&spec, composed, &dir.path, &req.config_dir, name).run()
    } else {
        match ranks {
            Some(gpus) => super::tp_launch::run_ranks(
                &worker_path()?,
                command,
                &dir.path,
                (
                    spec.runtime.tensor_parallel as usize,
                    std::time::Duration::from_secs(spec.runtime.tensor_parallel_timeout_s.into()),
                ),
                gpus,
            ),
            None => launch_worker(command, &dir.path),
        }
        .and_then(|()| build_reports(&dir.path, &spec))
    };
    // A signal that arrived while the stage ran ends it as interrupted, whatever it returned.
    let result = match shutdown::interrupted() {
        Some(sig) => Err(Interrupted(sig).into()),
        None => result,
    };
    let state = match &result {
        Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
            let sig = e.downcast_ref::<Interrupted>().map(|i| i.0).unwrap_or(2);
            shutdown::mark_interrupted(&dir, sig);
            eprintln!(
                "interrupted ({}): run directory kept at {}",
                shutdown::signal_name(sig),
                dir.path.display()
            );
            RunState::Interrupted
        }
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
    crate::report::html::write_after_run(&dir.path);
    shutdown::set_run(None);
    Ok((dir.path, state))
}

/// The reports of what the worker measured (stage 1 writes measurements.json): built here, as
/// `llmprof report DIR` builds them again later; report.md goes to stdout.
fn build_reports(run_dir: &Path, spec: &RunSpec) -> Result<()> {
    if !run_dir
        .join(crate::report::artifacts::MEASUREMENTS_JSON)
        .is_file()
    {
        return Ok(());
    }
    let report = crate::report::rebuild::stage1(run_dir, spec).with_context(|| {
        format!(
            "building the reports from the measurements (after a fix: `llmprof report {}`)",
            run_dir.display()
        )
    })?;
    crate::stdout::println(&crate::report::markdown::render(&report))?;
    Ok(())
}

/// The repository holding the config directory: relative data paths (datasets/…, models/…)
/// are read from there when they do not exist in the current directory.
pub(super) fn composed_base_dir(composed: &Composed) -> PathBuf {
    match composed.primary_config_dir() {
        Some(conf) => conf.parent().map(Path::to_path_buf).unwrap_or_default(),
        None => PathBuf::from("."),
    }
}

/// The workload binary next to this one (or `LLMPROF_WORKER`, any path, UTF-8 or not).
pub fn worker_path() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("LLMPROF_WORKER").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().context("locating the llmprof binary")?;
    Ok(exe.with_file_name("llmprof-worker"))
}

fn launch_worker(command: &str, run_dir: &Path) -> Result<()> {
    let worker = worker_path()?;
    if !worker.is_file() {
        if std::env::var_os("LLMPROF_WORKER").is_some_and(|p| !p.is_empty()) {
            bail!(
                "the workload binary {} that LLMPROF_WORKER names is missing\n  fix: point LLMPROF_WORKER at llmprof-worker, or unset it to use the one beside llmprof",
                worker.display()
            );
        }
        bail!(
            "the workload binary {} is missing\n  fix: build it with ./bootstrap.sh --yes (or cargo build --release with LIBTORCH_USE_PYTORCH=1)",
            worker.display()
        );
    }
    let mut cmd = std::process::Command::new(&worker);
    cmd.arg(command).arg(run_dir);
    let done = child::run(cmd, &format!("{}", worker.display()))?;
    if let Some(sig) = shutdown::interrupted() {
        return Err(Interrupted(sig).into());
    }
    match done.status.code() {
        Some(0) => Ok(()),
        Some(127) => bail!(
            "{} could not start (exit 127): libtorch was not found\n  fix: run ./bootstrap.sh --yes (installs torch==2.11.0 into .venv), or put torch/lib on LD_LIBRARY_PATH",
            worker.display()
        ),
        code => {
            // The worker writes its error to a file and to stderr: a full disk loses the file.
            let written = std::fs::read_to_string(run_dir.join(crate::run_dir::WORKER_ERROR))
                .unwrap_or_default();
            let detail = match written.trim() {
                "" => done
                    .last_error()
                    .unwrap_or_else(|| "no error message (see the log)".into()),
                text => text.to_string(),
            };
            let how = match code {
                Some(c) => format!("exited with status {c}"),
                None => "was killed by a signal".into(),
            };
            let log = if crate::logging::run_wants_log_file(run_dir) {
                format!("log: {}/llmprof.log", run_dir.display())
            } else {
                "log: on stderr above; hydra.job_logging writes no log file".into()
            };
            bail!("the workload {how}: {detail} ({log})")
        }
    }
}
