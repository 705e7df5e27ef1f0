//! The run directory: created fresh for every run (never reused), holding Hydra's `.hydra/`
//! files, `config.resolved.yaml`, the log and `status.json` (running → succeeded | failed |
//! interrupted, with the error). Knows nothing about what a stage writes into it.
use crate::config::{Composed, Node};
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};

use crate::run_files::{HYDRA_CONFIG_YAML, HYDRA_DIR, HYDRA_YAML, OVERRIDES_YAML};
pub use crate::run_files::{LOG_FILE, RESOLVED_CONFIG, STATUS_FILE, WORKER_ERROR};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    Running,
    Succeeded,
    Failed,
    Interrupted,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Status {
    pub state: RunState,
    pub command: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub error: Option<String>,
    pub llmprof_version: String,
    /// The launcher of a sweep job (basic, local, slurm); absent for a single run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<String>,
    /// A Slurm array task's id, `<array job id>_<task id>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_job_id: Option<String>,
}

/// Who started a run, for status.json (all None for a single run).
#[derive(Debug, Clone, Default)]
pub struct LaunchedBy {
    pub launcher: Option<String>,
    pub slurm_job_id: Option<String>,
}

#[derive(Debug, Clone)]
pub struct RunDir {
    pub path: PathBuf,
}

impl RunDir {
    /// Create `wanted` (or `wanted-1`, `wanted-2`, … when it exists: a run never reuses a folder)
    /// and write the config files into it.
    pub fn create(
        wanted: &Path,
        composed: &Composed,
        resolved_job: &Node,
        command: &str,
        launched_by: &LaunchedBy,
    ) -> Result<Self> {
        let path = create_fresh_dir(wanted, "hydra.run.dir")?;
        let dir = RunDir { path };
        let hydra_dir = dir.path.join(HYDRA_DIR);
        std::fs::create_dir_all(&hydra_dir)
            .with_context(|| format!("creating {}", hydra_dir.display()))?;
        dir.write(HYDRA_CONFIG_YAML, &composed.job.to_yaml())?;
        let abs = std::fs::canonicalize(&dir.path).unwrap_or(dir.path.clone());
        dir.write(HYDRA_YAML, &composed.hydra_config_for_run(&abs).to_yaml())?;
        dir.write(OVERRIDES_YAML, &composed.task_overrides().to_yaml())?;
        dir.write(RESOLVED_CONFIG, &resolved_job.to_yaml())?;
        dir.set_status(&Status {
            state: RunState::Running,
            command: command.to_string(),
            started_at: now(),
            finished_at: None,
            error: None,
            llmprof_version: crate::VERSION.to_string(),
            launcher: launched_by.launcher.clone(),
            slurm_job_id: launched_by.slurm_job_id.clone(),
        })?;
        Ok(dir)
    }

    pub fn write(&self, rel: &str, text: &str) -> Result<()> {
        let p = self.path.join(rel);
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    }

    /// Writes status.json atomically (a reader never sees half a file).
    pub fn set_status(&self, status: &Status) -> Result<()> {
        let text = serde_json::to_string_pretty(status).expect("status serialises");
        write_atomic(&self.path.join(STATUS_FILE), &(text + "\n"))
    }

    pub fn status(&self) -> Result<Status> {
        read_status(&self.path)
    }

    /// Mark the run finished (succeeded, or failed/interrupted with the error text).
    pub fn finish(&self, state: RunState, error: Option<String>) -> Result<()> {
        let mut s = self.status()?;
        s.state = state;
        s.finished_at = Some(now());
        s.error = error;
        self.set_status(&s)
    }
}

pub fn read_status(dir: &Path) -> Result<Status> {
    let p = dir.join(STATUS_FILE);
    let text = crate::dataset::file_kind::read_to_string(&p)
        .with_context(|| format!("reading {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))
}

fn now() -> String {
    chrono::Local::now().to_rfc3339()
}

/// Writes `text` to a temporary file beside `path`, then renames it over `path`: readers see the
/// old file or the new one, never a partial write. The error names the file.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let written = std::fs::write(&tmp, text)
        .with_context(|| format!("writing {}", path.display()))
        .and_then(|()| {
            std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
        // A full disk has no room for a second copy: overwriting in place frees the old blocks
        // first, so a status that fits before still fits now.
        if path.exists() && std::fs::write(path, text).is_ok() {
            return Ok(());
        }
    }
    written
}

/// Creates `wanted`, or `wanted-1`, `wanted-2`, … when it exists: a run or sweep never reuses a
/// folder (creation is atomic, so two processes starting in the same second get two folders).
/// `key` names the setting the path came from, for errors.
pub fn create_fresh_dir(wanted: &Path, key: &str) -> Result<PathBuf> {
    if wanted.as_os_str().is_empty() {
        anyhow::bail!("{key} is empty\n  fix: set {key}=<folder>, or leave it at its default");
    }
    if let Some(parent) = wanted.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
    }
    for i in 0..10_000 {
        let candidate = if i == 0 {
            wanted.to_path_buf()
        } else {
            PathBuf::from(format!("{}-{i}", wanted.display()))
        };
        // create_dir (not create_dir_all) fails if it exists: two runs never share a folder.
        match std::fs::create_dir(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("creating {} (from {key})", candidate.display()))
            }
        }
    }
    anyhow::bail!(
        "could not find a free run directory name near {}",
        wanted.display()
    )
}

/// The job folders of a multirun root, in job order: each sub-folder holding a status.json (every
/// job writes one when its directory is made), numbered names by number (2 before 10), others
/// after them by name. compare, `llmprof report` and the sweep summary list jobs with this.
pub fn job_dirs(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(STATUS_FILE).is_file())
        .collect();
    dirs.sort_by_key(|p| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        (name.parse::<u64>().unwrap_or(u64::MAX), name)
    });
    Ok(dirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn existing_directories_are_never_reused() {
        let base = std::env::temp_dir().join(format!("llmprof-rundir-{}", std::process::id()));
        let a = create_fresh_dir(&base, "hydra.run.dir").unwrap();
        let b = create_fresh_dir(&base, "hydra.run.dir").unwrap();
        assert_ne!(a, b);
        assert!(b.display().to_string().ends_with("-1"));
        std::fs::remove_dir_all(&a).unwrap();
        std::fs::remove_dir_all(&b).unwrap();
        let empty = create_fresh_dir(Path::new(""), "hydra.run.dir").unwrap_err();
        assert!(
            format!("{empty:#}").contains("hydra.run.dir is empty"),
            "{empty:#}"
        );
    }

    #[test]
    fn atomic_writes_replace_whole_files() {
        let dir = std::env::temp_dir().join(format!("llmprof-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("status.json");
        write_atomic(&p, "one").unwrap();
        write_atomic(&p, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        let err = write_atomic(&dir.join("missing/x.json"), "x").unwrap_err();
        assert!(format!("{err:#}").contains("missing/x.json"), "{err:#}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
