//! Building a run directory's reports from what the run recorded, in the front end: right after
//! the worker's stage 1, and again whenever `llmprof report DIR` asks (after a report fix, on an
//! old run, on another machine; no GPU, no libtorch). The worker writes measurements.json and the
//! raw outputs; everything derived from them is written here.
use super::artifacts::{self, MEASUREMENTS_JSON, METRICS_JSON};
use super::measurements::Stage1Measurements;
use super::metrics::RunReport;
use crate::run_dir::RESOLVED_CONFIG;
use crate::spec::RunSpec;
use anyhow::{Context, Result};
use std::path::Path;

/// What a rebuild of one run directory could build from.
#[derive(Debug)]
pub enum Rebuilt {
    /// measurements.json: metrics.json, report.md, the summary and assumptions.md, all anew.
    Measurements,
    /// A run recorded before measurements.json existed: metrics.json is kept as recorded (its
    /// numbers cannot be derived again), report.md and the summary are rendered from it.
    MetricsOnly,
    /// Neither file (an infer or stage-2 run, or a run that failed before measuring).
    Nothing,
}

/// Stage 1's reports from `run_dir`'s measurements.json under `spec` (the run's own spec).
pub fn stage1(run_dir: &Path, spec: &RunSpec) -> Result<RunReport> {
    let m = Stage1Measurements::read(&run_dir.join(MEASUREMENTS_JSON))?;
    let mut report = super::stage1::build(&m, spec);
    match ranks_side_by_side(run_dir, spec, &report) {
        Ok(ranks) => report.tensor_parallel = ranks,
        // Rank 0's own reports are built whatever became of the others'.
        Err(e) => {
            let note = format!("tensor parallel: the ranks are not set side by side: {e:#}");
            tracing::warn!("{note}");
            report.notes.push(note);
        }
    }
    artifacts::write_stage1_reports(run_dir, spec, &m, &report)
        .with_context(|| format!("writing the reports of {}", run_dir.display()))?;
    Ok(report)
}

/// A tensor-parallel run's ranks side by side: rank 0's `report` and each other rank's, built
/// from `<run>/rank<k>/measurements.json` under the same spec (and written there as that rank's
/// own reports). `None` with one rank.
fn ranks_side_by_side(
    run_dir: &Path,
    spec: &RunSpec,
    report: &RunReport,
) -> Result<Option<super::metrics_ranks::RanksInfo>> {
    let world = spec.runtime.tensor_parallel as usize;
    let rank_dir = |k: usize| run_dir.join(format!("{}{k}", crate::run_files::RANK_DIR_PREFIX));
    // Rank 0's folder holds the others'; a rank's own folder (rank<k>/, same config) is one rank.
    if world < 2 || !rank_dir(1).is_dir() {
        return Ok(None);
    }
    let mut reports = vec![report.clone()];
    for k in 1..world {
        let dir = rank_dir(k);
        let m = Stage1Measurements::read(&dir.join(MEASUREMENTS_JSON)).with_context(|| {
            format!("rank {k} of {world}: its measurements in {}", dir.display())
        })?;
        let r = super::stage1::build(&m, spec);
        // Each rank's own metrics.json and report.md beside its measurements.
        artifacts::write_stage1_reports(&dir, spec, &m, &r)
            .with_context(|| format!("writing rank {k}'s reports in {}", dir.display()))?;
        reports.push(r);
    }
    Ok(super::stage1::ranks::info(&reports))
}

/// Every report `run_dir` can have again, with the spec it recorded (config.resolved.yaml).
pub fn run_dir(run_dir: &Path) -> Result<Rebuilt> {
    if run_dir.join(MEASUREMENTS_JSON).is_file() {
        let spec = recorded_spec(run_dir)?;
        stage1(run_dir, &spec)?;
        return Ok(Rebuilt::Measurements);
    }
    let metrics = run_dir.join(METRICS_JSON);
    if !metrics.is_file() {
        return Ok(Rebuilt::Nothing);
    }
    let text = crate::dataset::file_kind::read_to_string(&metrics)
        .with_context(|| format!("reading {}", metrics.display()))?;
    let report: RunReport = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a metrics.json this llmprof reads (schema {})",
            metrics.display(),
            super::metrics::SCHEMA
        )
    })?;
    artifacts::write_report_renderings(run_dir, &report)?;
    Ok(Rebuilt::MetricsOnly)
}

/// The spec a run recorded (its resolved config), read as runs of older releases wrote it.
fn recorded_spec(run_dir: &Path) -> Result<RunSpec> {
    let path = run_dir.join(RESOLVED_CONFIG);
    let text = crate::dataset::file_kind::read_to_string(&path).with_context(|| {
        format!(
            "reading {} (a run's reports are built under the config it ran)",
            path.display()
        )
    })?;
    let tree = crate::config::yaml::parse(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    RunSpec::from_recorded_tree(&tree).with_context(|| format!("reading {}", path.display()))
}
