//! Reading what `compare` needs from a run directory (status.json, metrics.json, kernels.json,
//! .hydra/overrides.yaml) or from every job of a multirun root (multirun.yaml beside numbered job
//! folders). Every problem is a [`BadInput`] naming the file and the fix; nothing is written.
use super::BadInput;
use crate::measure::op_tables::KernelRow;
use crate::report::artifacts::{KERNELS_JSON, METRICS_JSON};
use crate::report::{RunReport, SCHEMA};
use crate::run_dir::{RunState, Status, STATUS_FILE};
use std::path::{Path, PathBuf};

/// The file that marks a multirun root.
use crate::run_files::MULTIRUN_YAML;
/// Hydra's record of a job's overrides.
use crate::run_files::OVERRIDES_YAML;

const FIX_PATH: &str = "pass a stage1 run directory (the folder holding metrics.json and status.json) or a multirun root (the folder holding multirun.yaml)";

/// One successful stage-1 run.
#[derive(Debug, Clone)]
pub struct Run {
    pub dir: PathBuf,
    pub report: RunReport,
    /// `None` when the run has no kernels.json.
    pub kernels: Option<Vec<KernelRow>>,
    /// Its command-line overrides (Hydra's `.hydra/overrides.yaml`), empty when absent.
    pub overrides: Vec<String>,
}

/// What one argument of `compare` names.
#[derive(Debug, Clone)]
pub enum Input {
    Single(Box<Run>),
    Sweep { root: PathBuf, jobs: Vec<Run> },
}

pub fn load_input(path: &Path) -> Result<Input, BadInput> {
    if !path.exists() {
        return Err(BadInput::new(path, "no such directory", FIX_PATH));
    }
    if !path.is_dir() {
        return Err(BadInput::new(path, "not a directory", FIX_PATH));
    }
    if path.join(STATUS_FILE).exists() || path.join(METRICS_JSON).exists() {
        return Ok(Input::Single(Box::new(load_run(path)?)));
    }
    if path.join(MULTIRUN_YAML).is_file() {
        return load_sweep(path);
    }
    Err(BadInput::new(
        path,
        format!("neither a run directory (no {STATUS_FILE}, no {METRICS_JSON}) nor a multirun root (no {MULTIRUN_YAML})"),
        FIX_PATH,
    ))
}

/// Every job folder of a multirun root, in job order; each must have succeeded.
fn load_sweep(root: &Path) -> Result<Input, BadInput> {
    let dirs = crate::run_dir::job_dirs(root)
        .map_err(|e| BadInput::new(root, format!("cannot list: {e}"), "check its permissions"))?;
    if dirs.is_empty() {
        return Err(BadInput::new(
            root,
            "a multirun root without job folders (none holds status.json)",
            "pass the sweep directory that `llmprof -m` printed, after its jobs ran",
        ));
    }
    let jobs = dirs
        .iter()
        .map(|d| load_run(d))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Input::Sweep {
        root: root.to_path_buf(),
        jobs,
    })
}

pub fn load_run(dir: &Path) -> Result<Run, BadInput> {
    let status = read_status(dir)?;
    if status.state != RunState::Succeeded {
        let state = format!("{:?}", status.state).to_lowercase();
        let why = status.error.map(|e| format!(": {e}")).unwrap_or_default();
        return Err(BadInput::new(
            &dir.join(STATUS_FILE),
            format!("this run did not succeed (state {state}{why})"),
            "compare runs that succeeded: rerun it, or pick another run directory",
        ));
    }
    if status.command != "stage1" {
        return Err(BadInput::new(
            dir,
            format!(
                "a `{}` run; compare reads the metrics.json of stage1 runs",
                status.command
            ),
            "pass the directories of `llmprof stage1` runs",
        ));
    }
    Ok(Run {
        dir: dir.to_path_buf(),
        report: read_metrics(dir)?,
        kernels: read_kernels(dir)?,
        overrides: read_overrides(dir)?,
    })
}

fn read_status(dir: &Path) -> Result<Status, BadInput> {
    let p = dir.join(STATUS_FILE);
    let text = crate::dataset::file_kind::read_to_string(&p).map_err(|e| {
        BadInput::new(
            &p,
            format!("cannot read: {e}"),
            "pass a complete llmprof run directory",
        )
    })?;
    serde_json::from_str(&text).map_err(|e| {
        BadInput::new(
            &p,
            format!("not a status.json llmprof wrote: {e}"),
            "pass an llmprof run directory whose files are intact",
        )
    })
}

fn read_metrics(dir: &Path) -> Result<RunReport, BadInput> {
    let p = dir.join(METRICS_JSON);
    let text = crate::dataset::file_kind::read_to_string(&p).map_err(|e| {
        BadInput::new(
            &p,
            format!("cannot read: {e}"),
            "a stage1 run that succeeded writes it: rerun the run",
        )
    })?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        BadInput::new(
            &p,
            format!("not valid JSON: {e}"),
            "rerun the run (the file is damaged)",
        )
    })?;
    let schema = value
        .get("schema")
        .and_then(|s| s.as_str())
        .unwrap_or("(none)");
    if schema != SCHEMA {
        return Err(BadInput::new(
            &p,
            format!("schema `{schema}`, but this llmprof reads `{SCHEMA}`"),
            "compare runs written with the same metrics schema: rerun the older run with this llmprof, or compare with the llmprof that wrote both",
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        BadInput::new(
            &p,
            format!(
                "does not match schema {SCHEMA} at `{}`: {}",
                e.path(),
                e.inner()
            ),
            "rerun the run with this llmprof (the file was edited or written by another build)",
        )
    })
}

fn read_kernels(dir: &Path) -> Result<Option<Vec<KernelRow>>, BadInput> {
    let p = dir.join(KERNELS_JSON);
    if !p.exists() {
        return Ok(None);
    }
    let text = crate::dataset::file_kind::read_to_string(&p).map_err(|e| {
        BadInput::new(
            &p,
            format!("cannot read: {e}"),
            "check its permissions, or delete it to compare without kernels",
        )
    })?;
    serde_json::from_str(&text).map(Some).map_err(|e| {
        BadInput::new(
            &p,
            format!("not a kernel table llmprof wrote: {e}"),
            "rerun the run, or delete the file to compare without kernels",
        )
    })
}

fn read_overrides(dir: &Path) -> Result<Vec<String>, BadInput> {
    let p = dir.join(OVERRIDES_YAML);
    if !p.exists() {
        return Ok(Vec::new());
    }
    let text = crate::dataset::file_kind::read_to_string(&p)
        .map_err(|e| BadInput::new(&p, format!("cannot read: {e}"), "check its permissions"))?;
    let list: Option<Vec<String>> = serde_yaml::from_str(&text).map_err(|e| {
        BadInput::new(
            &p,
            format!("not a list of overrides: {e}"),
            "restore the file Hydra wrote (a YAML list of strings)",
        )
    })?;
    Ok(list.unwrap_or_default())
}
