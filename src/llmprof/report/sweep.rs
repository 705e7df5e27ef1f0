//! A sweep's summary: one row per job with the sweep axes (the override keys whose values differ
//! between jobs) as columns and the headline numbers read from each job's metrics.json (TTFT
//! p50, TPOT p50, tokens/s per GPU and per user, MFU, MBU, peak memory, energy per token), plus
//! the job's state and, for a failed job, its error. Rendered as summary.md here and as the
//! multirun root's report.html by `html::sweep_page`.
use super::artifacts::METRICS_JSON;
use crate::run_dir::read_status;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One job of a sweep as the launcher knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepJob {
    pub num: usize,
    pub overrides: Vec<String>,
    /// succeeded, failed, interrupted, running, not started.
    pub status: String,
    /// Why it failed, when the launcher knows (else status.json's error is read).
    pub error: Option<String>,
    /// Its run directory, once created.
    pub dir: Option<PathBuf>,
    /// The GPU it ran on (`index: name`), when the launcher pinned it to one.
    pub gpu: Option<String>,
}

/// A headline metric: key, column title, JSON pointer into metrics.json, scale, decimals.
pub struct Metric {
    pub key: &'static str,
    pub title: &'static str,
    pointer: &'static str,
    scale: f64,
    pub decimals: usize,
}

pub const TTFT: &str = "ttft_p50_ms";
pub const TPOT: &str = "tpot_p50_ms";
pub const TOKENS_PER_S: &str = "tokens_per_s";
pub const TOKENS_PER_S_PER_USER: &str = "tokens_per_s_per_user";

/// The headline metrics, in column order.
pub const METRICS: [Metric; 8] = [
    Metric {
        key: TTFT,
        title: "TTFT p50 ms",
        pointer: "/serving/ttft_ms/p50_ms",
        scale: 1.0,
        decimals: 2,
    },
    Metric {
        key: TPOT,
        title: "TPOT p50 ms",
        pointer: "/serving/tpot_ms/p50_ms",
        scale: 1.0,
        decimals: 3,
    },
    Metric {
        key: TOKENS_PER_S,
        title: "tokens/s",
        pointer: "/throughput/tokens_per_s_aggregate",
        scale: 1.0,
        decimals: 1,
    },
    Metric {
        key: TOKENS_PER_S_PER_USER,
        title: "tokens/s per user",
        pointer: "/throughput/tokens_per_s_per_request_mean",
        scale: 1.0,
        decimals: 1,
    },
    Metric {
        key: "mfu_pct",
        title: "MFU %",
        pointer: "/utilisation/mfu/e2e",
        scale: 100.0,
        decimals: 2,
    },
    Metric {
        key: "mbu_pct",
        title: "MBU %",
        pointer: "/utilisation/mbu_decode",
        scale: 100.0,
        decimals: 2,
    },
    Metric {
        key: "peak_memory_gib",
        title: "peak memory GiB",
        pointer: "/memory/peak_allocated_gib",
        scale: 1.0,
        decimals: 2,
    },
    Metric {
        key: "energy_j_per_token",
        title: "J/token",
        pointer: "/nvml/energy_j_per_output_token",
        scale: 1.0,
        decimals: 3,
    },
];

/// One row of the summary.
#[derive(Debug, Clone)]
pub struct SweepRow {
    pub job: SweepJob,
    /// The job's value of each axis (same order as `SweepTable::axes`; "" when it has none).
    pub axis_values: Vec<String>,
    /// Each of [`METRICS`], when metrics.json has it.
    pub values: Vec<Option<f64>>,
    /// Why the job failed, or why its numbers are missing.
    pub error: Option<String>,
    /// "8 requested, 2 ran" when the job's timed batches ran fewer rows than requested.
    pub batch_differs: Option<String>,
}

#[derive(Debug, Clone)]
pub struct SweepTable {
    /// Override keys whose values differ between jobs.
    pub axes: Vec<String>,
    pub rows: Vec<SweepRow>,
}

impl SweepTable {
    /// Whether the summary needs a "batch ran" column: some job's batches ran another number
    /// of rows than it asked for.
    pub fn has_batch_column(&self) -> bool {
        self.rows.iter().any(|r| r.batch_differs.is_some())
    }
}

impl SweepRow {
    /// The job's "batch ran" cell.
    pub fn batch_ran(&self) -> String {
        self.batch_differs
            .clone()
            .unwrap_or_else(|| "as requested".into())
    }

    pub fn value(&self, key: &str) -> Option<f64> {
        METRICS
            .iter()
            .position(|m| m.key == key)
            .and_then(|i| self.values[i])
    }
}

/// `key=value` of one override (`+key`, `++key` and `~key` give their key).
fn split(o: &str) -> (String, String) {
    let (k, v) = o.split_once('=').unwrap_or((o, ""));
    (k.trim_start_matches(['+', '~']).to_string(), v.to_string())
}

/// The sweep axes: override keys, in first-seen order, whose values differ between jobs.
pub fn axes(jobs: &[SweepJob]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for j in jobs {
        for o in &j.overrides {
            let k = split(o).0;
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys.into_iter()
        .filter(|k| {
            let mut values = jobs.iter().map(|j| value_of(j, k));
            let first = values.next();
            values.any(|v| Some(v) != first)
        })
        .collect()
}

fn value_of(j: &SweepJob, key: &str) -> String {
    j.overrides
        .iter()
        .map(|o| split(o))
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
        .unwrap_or_default()
}

/// Reads each job's metrics.json (and status.json for errors) and builds the table.
pub fn table(jobs: &[SweepJob]) -> SweepTable {
    let axes = axes(jobs);
    let rows = jobs
        .iter()
        .map(|j| {
            let mut error = j.error.clone();
            if error.is_none() && j.status == "failed" {
                error = j
                    .dir
                    .as_deref()
                    .and_then(|d| read_status(d).ok())
                    .and_then(|s| s.error)
                    .or_else(|| Some("no error recorded".into()));
            }
            let (values, missing, batch_differs) = match j.dir.as_deref().map(read_metrics) {
                Some(Ok(m)) => (
                    METRICS.iter().map(|x| pick(&m, x)).collect(),
                    None,
                    batch_differs(&m),
                ),
                Some(Err(why)) if j.status == "succeeded" => {
                    (vec![None; METRICS.len()], Some(why), None)
                }
                _ => (vec![None; METRICS.len()], None, None),
            };
            SweepRow {
                job: j.clone(),
                axis_values: axes.iter().map(|a| value_of(j, a)).collect(),
                values,
                error: error.or(missing),
                batch_differs,
            }
        })
        .collect();
    SweepTable { axes, rows }
}

fn read_metrics(dir: &Path) -> Result<Value, String> {
    let p = dir.join(METRICS_JSON);
    let text = crate::dataset::file_kind::read_to_string(&p)
        .map_err(|e| format!("no numbers: {}: {e}", p.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?;
    match v.get("schema").and_then(Value::as_str) {
        Some(s) if s.starts_with("llmprof.metrics/") => Ok(v),
        _ => Err(format!(
            "{}: not an llmprof metrics file (no schema)",
            p.display()
        )),
    }
}

/// "B requested, E ran" when metrics.json's `setup.effective_batch_size` differs from
/// `setup.batch_size`.
fn batch_differs(m: &Value) -> Option<String> {
    let requested = m.pointer("/setup/batch_size")?.as_u64()?;
    let ran = m.pointer("/setup/effective_batch_size")?.as_u64()?;
    super::metrics::batch_ran_label(requested, ran)
}

fn pick(m: &Value, x: &Metric) -> Option<f64> {
    m.pointer(x.pointer)
        .and_then(Value::as_f64)
        .map(|v| v * x.scale)
}

/// A table cell: no pipes, no line breaks.
fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// summary.md: `| job | overrides | <axes> | <metrics> | status | directory |`.
pub fn summary_markdown(jobs: &[SweepJob]) -> String {
    let t = table(jobs);
    let mut head = vec!["job".to_string(), "overrides".to_string()];
    head.extend(t.axes.iter().cloned());
    head.extend(METRICS.iter().map(|m| m.title.to_string()));
    head.extend(["status".to_string(), "directory".to_string()]);
    let gpus = jobs.iter().any(|j| j.gpu.is_some());
    if gpus {
        head.push("GPU".to_string());
    }
    let batch_column = t.has_batch_column();
    if batch_column {
        head.push("batch ran".to_string());
    }
    let mut s = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for r in &t.rows {
        let mut cells = vec![
            r.job.num.to_string(),
            format!("`{}`", r.job.overrides.join(" ")),
        ];
        cells.extend(r.axis_values.iter().map(|v| md_cell(v)));
        cells.extend(METRICS.iter().zip(&r.values).map(|(m, v)| match v {
            Some(v) => format!("{v:.*}", m.decimals),
            None => "—".into(),
        }));
        cells.push(match (&r.error, r.job.status.as_str()) {
            (Some(e), "failed") => md_cell(&format!("failed: {e}")),
            _ => r.job.status.clone(),
        });
        cells.push(
            r.job
                .dir
                .as_ref()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
        );
        if gpus {
            cells.push(r.job.gpu.clone().unwrap_or_default());
        }
        if batch_column {
            cells.push(r.batch_ran());
        }
        s.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    s
}

/// The jobs of a sweep folder already on disk (for `llmprof report <multirun root>`), as
/// `run_dir::job_dirs` lists them, numbered by their name where it is a number.
pub fn jobs_on_disk(root: &Path) -> std::io::Result<Vec<SweepJob>> {
    let dirs = crate::run_dir::job_dirs(root)?;
    Ok(dirs
        .into_iter()
        .enumerate()
        .map(|(i, dir)| {
            let status = read_status(&dir).ok();
            let overrides = crate::dataset::file_kind::read_to_string(
                dir.join(crate::run_files::OVERRIDES_YAML),
            )
            .ok()
            .and_then(|t| {
                serde_yaml::from_str::<Option<Vec<String>>>(&t)
                    .ok()
                    .flatten()
            })
            .unwrap_or_default();
            let num = dir
                .file_name()
                .and_then(|n| n.to_string_lossy().parse().ok())
                .unwrap_or(i);
            SweepJob {
                num,
                overrides,
                status: status
                    .as_ref()
                    .map(|s| format!("{:?}", s.state).to_lowercase())
                    .unwrap_or_else(|| "unknown".into()),
                error: None,
                gpu: None,
                dir: Some(dir),
            }
        })
        .collect())
}
