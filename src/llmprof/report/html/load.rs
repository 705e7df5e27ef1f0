//! Reading a run directory's artifacts for report.html. Every artifact is optional: a missing one
//! leaves its sections saying so, an unreadable one is listed in `problems` (the page shows them)
//! and never stops the report.
use crate::measure::nvml::NvmlTrace;
use crate::measure::op_tables::KernelRow;
use crate::nsight::ncu::analysis::{ncu_roofline_with, NcuAnalysis};
use crate::report::artifacts::{ENV_JSON, KERNELS_JSON, METRICS_JSON, NVML_CSV, PREDICTIONS_JSONL};
use crate::report::measurements::Stage1Measurements;
use crate::report::RunReport;
use crate::run_dir::{Status, RESOLVED_CONFIG, STATUS_FILE};
use crate::run_files::{MEASUREMENTS_JSON, STAGE2_KINETO_DIR};
use crate::spec::RunSpec;
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

pub use crate::report::artifacts::{NCU_DIR, OVERRIDES_YAML};

/// Everything report.html reads from one run directory.
#[derive(Default)]
pub struct RunArtifacts {
    pub dir: PathBuf,
    pub status: Option<Status>,
    pub metrics: Option<RunReport>,
    pub nvml: Option<NvmlTrace>,
    /// The comment nvml.csv carries instead of samples (NVML unavailable, sampling disabled).
    pub nvml_note: Option<String>,
    pub kernels: Option<Vec<KernelRow>>,
    pub ncu: Option<NcuAnalysis>,
    pub spec: Option<RunSpec>,
    pub config_yaml: Option<String>,
    pub overrides: Vec<String>,
    pub env: Option<serde_json::Value>,
    pub predictions: Vec<serde_json::Value>,
    /// Artifacts that exist but could not be read, with why.
    pub problems: Vec<String>,
}

impl RunArtifacts {
    /// Fails, naming the fix, when `dir` is not a run directory (no status.json, no metrics.json).
    pub fn check_is_run_dir(dir: &Path) -> Result<()> {
        if !dir.is_dir() {
            bail!(
                "{} is not a directory\n  fix: pass a run directory (the folder with status.json and metrics.json)",
                dir.display()
            );
        }
        if !dir.join(STATUS_FILE).is_file() && !dir.join(METRICS_JSON).is_file() {
            bail!(
                "{} is not an llmprof run directory (no {STATUS_FILE}, no {METRICS_JSON})\n  fix: pass the folder a stage1/stage2/infer run wrote, or a multirun root (with multirun.yaml)",
                dir.display()
            );
        }
        Ok(())
    }

    /// Reads what `dir` holds. Fails only when `dir` is not a run directory (no status.json,
    /// no metrics.json).
    pub fn load(dir: &Path) -> Result<Self> {
        Self::check_is_run_dir(dir)?;
        let mut a = RunArtifacts {
            dir: dir.to_path_buf(),
            ..RunArtifacts::default()
        };
        a.status = a.read(STATUS_FILE, |t| Ok(serde_json::from_str(t)?));
        a.metrics = a.read(METRICS_JSON, |t| Ok(serde_json::from_str(t)?));
        a.kernels = a.read(KERNELS_JSON, |t| Ok(serde_json::from_str(t)?));
        a.env = a.read(ENV_JSON, |t| Ok(serde_json::from_str(t)?));
        a.config_yaml = a.read(RESOLVED_CONFIG, |t| Ok(t.to_string()));
        a.spec = a.read(RESOLVED_CONFIG, |t| {
            RunSpec::from_recorded_tree(&crate::config::yaml::parse(t)?)
        });
        a.overrides = a
            .read(OVERRIDES_YAML, |t| {
                Ok(serde_yaml::from_str::<Option<Vec<String>>>(t)?.unwrap_or_default())
            })
            .unwrap_or_default();
        if let Some(text) = a.read(NVML_CSV, |t| Ok(t.to_string())) {
            let comments: Vec<&str> = text
                .lines()
                .filter_map(|l| l.strip_prefix('#').map(str::trim))
                .collect();
            a.nvml_note = comments.first().map(|c| c.to_string());
            let rows: String = text
                .lines()
                .filter(|l| !l.starts_with('#'))
                .map(|l| format!("{l}\n"))
                .collect();
            a.nvml = a.parse(NVML_CSV, &rows, NvmlTrace::from_csv);
        }
        a.predictions = a
            .read(PREDICTIONS_JSONL, |t| {
                t.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| Ok(serde_json::from_str(l)?))
                    .collect()
            })
            .unwrap_or_default();
        let ncu = dir.join(NCU_DIR);
        if ncu.is_dir() {
            // Stage 2's Kineto child names each kernel's module (docs/modules.md).
            let ops =
                Stage1Measurements::read(&dir.join(STAGE2_KINETO_DIR).join(MEASUREMENTS_JSON))
                    .ok()
                    .and_then(|m| m.kineto)
                    .map(|k| k.kernel_ops(|_| true))
                    .unwrap_or_default();
            match ncu_roofline_with(&ncu, None, &ops) {
                Ok(x) => a.ncu = Some(x),
                Err(e) => a.problems.push(format!("{NCU_DIR}/: {e:#}")),
            }
        }
        Ok(a)
    }

    /// The stage that wrote the directory: status.json's command, else metrics.json's.
    pub fn command(&self) -> String {
        match (&self.status, &self.metrics) {
            (Some(s), _) => s.command.clone(),
            (None, Some(m)) => m.command.clone(),
            (None, None) => "run".into(),
        }
    }

    /// Files of the run directory present on disk (for the links section).
    pub fn has(&self, name: &str) -> bool {
        self.dir.join(name).exists()
    }

    fn read<T>(&mut self, name: &str, parse: impl Fn(&str) -> Result<T>) -> Option<T> {
        let path = self.dir.join(name);
        if !path.is_file() {
            return None;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) => self.parse(name, &text, parse),
            Err(e) => {
                self.problems.push(format!("{name}: {e}"));
                None
            }
        }
    }

    fn parse<T>(&mut self, name: &str, text: &str, parse: impl Fn(&str) -> Result<T>) -> Option<T> {
        match parse(text) {
            Ok(v) => Some(v),
            Err(e) => {
                self.problems.push(format!("{name}: {e:#}"));
                None
            }
        }
    }
}
