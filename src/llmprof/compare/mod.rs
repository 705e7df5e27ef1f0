//! `llmprof compare A B`: two stage-1 runs (or two multirun roots, jobs matched by their sweep
//! overrides) side by side. Per metric: both values, the change, and a verdict from a
//! significance test on the per-request samples combined with a threshold; a setup-mismatch
//! list; the kernels whose time changed most. Reads run directories (metrics.json, status.json,
//! kernels.json, .hydra/overrides.yaml), or two traces (`traces`: trace files or the folders
//! `analyze trace --out` writes, per-iteration times as samples); never runs anything. Rendering and exit
//! codes are the caller's (`app/compare_cmd.rs`). docs/compare.md describes it.
pub mod catalogue;
pub mod kernels;
pub mod load;
pub mod matching;
pub mod render_html;
pub mod render_md;
pub mod setup;
pub mod stats;
pub mod traces;
pub mod verdict;

use serde::Serialize;
use std::path::{Path, PathBuf};

pub use verdict::{Basis, MetricRow, Verdict};

/// Bad input: a missing or unreadable run, a schema mismatch, a run that did not succeed, an
/// unknown metric name. Each names the file and the fix.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {problem}\n  fix: {fix}")]
pub struct BadInput {
    pub path: String,
    pub problem: String,
    pub fix: String,
}

impl BadInput {
    pub fn new(path: &Path, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        BadInput {
            path: path.display().to_string(),
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

/// What the user chose.
#[derive(Debug, Clone)]
pub struct Options {
    /// A change smaller than this (in %) is never a regression or an improvement.
    pub threshold_pct: f64,
    /// Metric names to compare (empty: all); see [`catalogue::selects`].
    pub metrics: Vec<String>,
    pub bootstrap: stats::BootstrapSettings,
    /// Significance level of the Mann-Whitney U test.
    pub alpha: f64,
    /// How many kernels the kernel diff lists.
    pub top_kernels: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threshold_pct: 5.0,
            metrics: Vec::new(),
            bootstrap: stats::BootstrapSettings::default(),
            alpha: 0.05,
            top_kernels: 15,
        }
    }
}

/// How verdicts were reached, stated in every output.
#[derive(Debug, Clone, Serialize)]
pub struct Method {
    pub test: String,
    pub confidence: f64,
    pub alpha: f64,
    pub bootstrap_resamples: usize,
    pub bootstrap_seed: u64,
    pub threshold_pct: f64,
}

/// One pair of runs compared (a single comparison, or one matched job of two sweeps).
#[derive(Debug, Clone, Serialize)]
pub struct PairComparison {
    /// The job's sweep overrides (empty for two single runs).
    pub job: String,
    pub a: PathBuf,
    pub b: PathBuf,
    pub setup_mismatch: Vec<setup::Mismatch>,
    /// The fast-path switches whose values differ (`runtime.optim.*`, `model.optim.*`).
    pub switches: Vec<setup::Mismatch>,
    pub metrics: Vec<MetricRow>,
    pub kernels: kernels::KernelDiff,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: PathBuf,
    pub b: PathBuf,
    pub method: Method,
    pub pairs: Vec<PairComparison>,
    /// Jobs of one sweep that have no match in the other.
    pub unmatched_jobs: Vec<String>,
    /// "<job> <metric>" of every regression beyond the threshold.
    pub regressions: Vec<String>,
}

impl Comparison {
    /// 1 when any metric regressed beyond the threshold, else 0.
    pub fn exit_code(&self) -> i32 {
        i32::from(!self.regressions.is_empty())
    }
}

/// Loads both sides, matches jobs, compares every selected metric and the kernels.
pub fn compare(a: &Path, b: &Path, opts: &Options) -> Result<Comparison, BadInput> {
    let (out, unmatched_jobs) = match (traces::is_trace_input(a), traces::is_trace_input(b)) {
        (true, true) => compare_traces(a, b, opts)?,
        (false, false) => compare_runs(a, b, opts)?,
        (a_trace, _) => {
            let (trace, run) = if a_trace { (a, b) } else { (b, a) };
            return Err(BadInput::new(
                run,
                format!("a run directory, while {} is a trace", trace.display()),
                "compare two runs, or two traces (files or `analyze trace --out` folders)",
            ));
        }
    };
    finish(a, b, opts, out, unmatched_jobs)
}

/// Two traces (or analysed traces), rank by rank.
fn compare_traces(
    a: &Path,
    b: &Path,
    opts: &Options,
) -> Result<(Vec<PairComparison>, Vec<String>), BadInput> {
    let (left, right) = (traces::load(a)?, traces::load(b)?);
    let (pairs, unmatched) = traces::pairs(&left, &right);
    if pairs.is_empty() {
        return Err(BadInput::new(
            b,
            "no rank of these traces matches a rank of A",
            "compare traces of the same ranks",
        ));
    }
    let out = pairs
        .into_iter()
        .map(|(label, x, y)| {
            let devices = |t: &crate::trace::TraceAnalysis| t.source.devices.join(", ");
            let setup_mismatch = if devices(x) != devices(y) {
                vec![setup::Mismatch {
                    field: "gpu".into(),
                    a: devices(x),
                    b: devices(y),
                }]
            } else {
                Vec::new()
            };
            PairComparison {
                job: label,
                a: PathBuf::from(&x.source.path),
                b: PathBuf::from(&y.source.path),
                setup_mismatch,
                switches: Vec::new(),
                metrics: verdict::compare_all(&traces::metrics(x), &traces::metrics(y), opts),
                kernels: kernels::diff(
                    Some(&traces::kernel_rows(x)),
                    Some(&traces::kernel_rows(y)),
                    opts.top_kernels,
                ),
            }
        })
        .collect();
    Ok((out, unmatched))
}

/// Two runs or two sweeps, job by job.
fn compare_runs(
    a: &Path,
    b: &Path,
    opts: &Options,
) -> Result<(Vec<PairComparison>, Vec<String>), BadInput> {
    let left = load::load_input(a)?;
    let right = load::load_input(b)?;
    let (pairs, unmatched_jobs) = matching::pairs(&left, &right, a, b)?;
    let mut out = Vec::new();
    for p in &pairs {
        let ca = catalogue::metrics(&p.a.report);
        let cb = catalogue::metrics(&p.b.report);
        let rows = verdict::compare_all(&ca, &cb, opts);
        out.push(PairComparison {
            job: p.label.clone(),
            a: p.a.dir.clone(),
            b: p.b.dir.clone(),
            setup_mismatch: setup::mismatches(&p.a.report, &p.b.report),
            switches: setup::switch_differences(&p.a.report, &p.b.report),
            metrics: rows,
            kernels: kernels::diff(
                p.a.kernels.as_deref(),
                p.b.kernels.as_deref(),
                opts.top_kernels,
            ),
        });
    }
    Ok((out, unmatched_jobs))
}

/// Selects the metrics asked for and collects the regressions.
fn finish(
    a: &Path,
    b: &Path,
    opts: &Options,
    mut out: Vec<PairComparison>,
    unmatched_jobs: Vec<String>,
) -> Result<Comparison, BadInput> {
    if !opts.metrics.is_empty() {
        check_metric_names(&opts.metrics, &out, a)?;
        for p in &mut out {
            p.metrics
                .retain(|m| catalogue::selects(&opts.metrics, &m.key));
        }
    }
    let regressions = out
        .iter()
        .flat_map(|p| {
            p.metrics
                .iter()
                .filter(|m| m.verdict == Verdict::Regressed)
                .map(move |m| match p.job.as_str() {
                    "" => m.label.clone(),
                    job => format!("[{job}] {}", m.label),
                })
        })
        .collect();
    Ok(Comparison {
        a: a.to_path_buf(),
        b: b.to_path_buf(),
        method: Method {
            test: verdict::METHOD.to_string(),
            confidence: opts.bootstrap.confidence,
            alpha: opts.alpha,
            bootstrap_resamples: opts.bootstrap.resamples,
            bootstrap_seed: opts.bootstrap.seed,
            threshold_pct: opts.threshold_pct,
        },
        pairs: out,
        unmatched_jobs,
        regressions,
    })
}

/// Every name given to --metrics must select at least one metric of the runs.
fn check_metric_names(
    names: &[String],
    pairs: &[PairComparison],
    a: &Path,
) -> Result<(), BadInput> {
    let keys: Vec<&str> = pairs
        .iter()
        .flat_map(|p| p.metrics.iter().map(|m| m.key.as_str()))
        .collect();
    for n in names {
        if !keys
            .iter()
            .any(|k| catalogue::selects(std::slice::from_ref(n), k))
        {
            let mut known: Vec<&str> = keys.clone();
            known.sort_unstable();
            known.dedup();
            return Err(BadInput::new(
                a,
                format!("--metrics names `{n}`, which selects no metric of these runs"),
                format!("use names from: {}", known.join(", ")),
            ));
        }
    }
    Ok(())
}
