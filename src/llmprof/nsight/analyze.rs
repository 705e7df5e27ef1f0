//! `llmprof analyze nsys|ncu PATH`: read Nsight exports from a file or folder and render them as
//! markdown tables or JSON. Pure reading and formatting, except that a `.nsys-rep` is first
//! exported with `nsys stats`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use indexmap::IndexMap;
use serde_json::json;

use super::ncu::metrics::{derive as derive_metrics, KernelMetrics};
use super::ncu::parse::{parse as parse_ncu, Error as NcuError, KernelRecord, Value};
use super::nsys::command::{stats_args, stats_output_path};
use super::nsys::parse::{parse_report, Error as NsysError, Report, ReportKind};
use super::tool::find_tool;
use crate::measure::peaks::{props_for_name, resolve as resolve_peaks, GpuProps, Peaks};
use crate::roofline::{markdown, KernelPoint, RooflineReport, Thresholds};

/// Kernel rows shown per nsys report in markdown (JSON has all).
const MD_ROWS: usize = 25;

/// CSV files under `path` (recursively, sorted), or `path` itself when it is a file.
fn csv_files(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !path.is_dir() {
        bail!("{} does not exist", path.display());
    }
    let pattern = format!(
        "{}/**/*.csv",
        glob::Pattern::escape(&path.display().to_string())
    );
    let mut files: Vec<PathBuf> = glob::glob(&pattern)
        .context("building the CSV search pattern")?
        .flatten()
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no .csv files under {}", path.display());
    }
    Ok(files)
}

/// `file` relative to `base`; its own name when `base` is the file.
fn rel(base: &Path, file: &Path) -> String {
    match file.strip_prefix(base) {
        Ok(r) if !r.as_os_str().is_empty() => r.display().to_string(),
        _ => file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.display().to_string()),
    }
}

/// Exports a `.nsys-rep` with `nsys stats` into a temporary folder and returns that folder.
fn export_nsys_rep(rep: &Path) -> Result<PathBuf> {
    let nsys = find_tool("nsys").with_context(|| format!("cannot export {}", rep.display()))?;
    let dir = std::env::temp_dir().join(format!("llmprof-nsys-stats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let prefix = dir.join("stats");
    let out = Command::new(&nsys)
        .args(stats_args(rep, &prefix))
        .output()
        .with_context(|| format!("running {}", nsys.display()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: String = stderr
            .lines()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        bail!(
            "`nsys stats` on {} failed ({}):\n{tail}",
            rep.display(),
            out.status
        );
    }
    if !ReportKind::ALL
        .iter()
        .any(|k| stats_output_path(&prefix, *k).exists())
    {
        bail!("`nsys stats` wrote no CSV files under {}", dir.display());
    }
    Ok(dir)
}

/// Analyses nsys CSV exports: a folder (searched recursively), one CSV, or a `.nsys-rep`.
pub fn analyze_nsys(path: &Path, json: bool) -> Result<String> {
    let base = if path.extension().is_some_and(|e| e == "nsys-rep") {
        export_nsys_rep(path)?
    } else {
        path.to_path_buf()
    };
    let single = base.is_file();
    let mut reports = Vec::new();
    let mut skipped = Vec::new();
    for file in csv_files(&base)? {
        let f =
            std::fs::File::open(&file).with_context(|| format!("opening {}", file.display()))?;
        match parse_report(f) {
            Ok(r) => reports.push((rel(&base, &file), r)),
            Err(NsysError::NoHeader) if !single => skipped.push(rel(&base, &file)),
            Err(e) => return Err(e).with_context(|| format!("parsing {}", file.display())),
        }
    }
    if reports.is_empty() {
        bail!(
            "no nsys stats report among the CSV files under {}",
            base.display()
        );
    }
    if json {
        let list: Vec<serde_json::Value> = reports
            .iter()
            .map(|(file, r)| {
                let mut v = serde_json::to_value(r).expect("report rows serialise");
                v["file"] = json!(file);
                v
            })
            .collect();
        let doc = json!({ "source": path.display().to_string(), "reports": list, "skipped_files": skipped });
        return serde_json::to_string_pretty(&doc).context("serialising the nsys analysis");
    }
    let mut md = format!("# nsys summary: {}\n", path.display());
    for (file, r) in &reports {
        let _ = writeln!(md, "\n## {file} ({})\n", r.kind().name());
        md.push_str(&nsys_table(r));
    }
    if !skipped.is_empty() {
        let _ = writeln!(
            md,
            "\nSkipped (not an nsys stats report): {}",
            skipped.join(", ")
        );
    }
    Ok(md)
}

fn ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

fn us(ns: f64) -> String {
    format!("{:.2}", ns / 1e3)
}

fn pct(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "—".into())
}

fn nsys_table(r: &Report) -> String {
    let mut md = String::new();
    let mut more = 0;
    match r {
        Report::CudaGpuKernSum(rows) => {
            md.push_str("| # | kernel | total (ms) | instances | avg (µs) | median (µs) | min (µs) | max (µs) | share % |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
            for (i, k) in rows.iter().take(MD_ROWS).enumerate() {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    i + 1,
                    markdown::short_name(&k.kernel_name, 80).replace('|', "\\|"),
                    ms(k.total_ns),
                    k.instances,
                    us(k.avg_ns),
                    us(k.median_ns),
                    us(k.min_ns),
                    us(k.max_ns),
                    pct(k.share_pct)
                );
            }
            more = rows.len().saturating_sub(MD_ROWS);
        }
        Report::NvtxSum(rows) => {
            md.push_str("| range | style | total (ms) | instances | avg (µs) | median (µs) | share % |\n|---|---|---:|---:|---:|---:|---:|\n");
            for n in rows {
                let s = &n.stats;
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    n.range,
                    n.style.as_deref().unwrap_or("—"),
                    ms(s.total_ns),
                    s.count,
                    us(s.avg_ns),
                    us(s.median_ns),
                    pct(s.share_pct)
                );
            }
        }
        Report::NvtxGpuProjSum(rows) => {
            md.push_str("| range | GPU projected (ms) | range wall (ms) | instances | GPU ops |\n|---|---:|---:|---:|---:|\n");
            for n in rows {
                let wall = n.total_range_ns.map(ms).unwrap_or_else(|| "—".into());
                let ops = n
                    .total_gpu_ops
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "—".into());
                let _ = writeln!(
                    md,
                    "| {} | {} | {wall} | {} | {ops} |",
                    n.range,
                    ms(n.total_proj_ns),
                    n.range_instances
                );
            }
        }
        Report::CudaApiSum(rows) => {
            md.push_str(
                "| API | total (ms) | calls | avg (µs) | share % |\n|---|---:|---:|---:|---:|\n",
            );
            for a in rows {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} |",
                    a.name,
                    ms(a.stats.total_ns),
                    a.stats.count,
                    us(a.stats.avg_ns),
                    pct(a.stats.share_pct)
                );
            }
        }
        Report::CudaGpuMemTimeSum(rows) => {
            md.push_str("| operation | total (ms) | count | avg (µs) | share % |\n|---|---:|---:|---:|---:|\n");
            for m in rows {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} |",
                    m.operation,
                    ms(m.stats.total_ns),
                    m.stats.count,
                    us(m.stats.avg_ns),
                    pct(m.stats.share_pct)
                );
            }
        }
    }
    if more > 0 {
        let _ = writeln!(md, "\n({more} more rows in the JSON output.)");
    }
    md
}

/// GPU properties from ncu `device__attribute_*` columns (raw page), when all are present.
pub fn gpu_props_from_record(rec: &KernelRecord) -> Option<GpuProps> {
    let n = |k: &str| rec.number(&format!("device__attribute_{k}"));
    let name = match &rec.metrics.get("device__attribute_display_name")?.value {
        Value::Text(s) => s.clone(),
        _ => return None,
    };
    Some(GpuProps {
        name,
        compute_capability: Some((
            n("compute_capability_major")? as u32,
            n("compute_capability_minor")? as u32,
        )),
        sm_count: Some(n("multiprocessor_count")? as u32),
        max_sm_clock_mhz: Some(n("max_gpu_frequency_khz").or_else(|| n("clock_rate"))? / 1e3),
        max_mem_clock_mhz: Some(
            n("max_mem_frequency_khz").or_else(|| n("memory_clock_rate"))? / 1e3,
        ),
        memory_bus_width_bits: Some(n("global_memory_bus_width")? as u32),
        ..GpuProps::default()
    })
}

/// Parsed ncu kernels and their roofline.
pub struct NcuAnalysis {
    pub kernels: Vec<KernelMetrics>,
    pub roofline: RooflineReport,
}

/// Reads ncu CSVs under `path` (folder, recursive, or one file), merges the exports of one launch
/// (same folder, ID, process and kernel name) and classifies each kernel. Peaks come from the
/// device attributes in a raw CSV, else from `gpu`, else are unknown (bounds say so).
pub fn ncu_roofline(path: &Path, gpu: Option<&str>) -> Result<NcuAnalysis> {
    let single = path.is_file();
    let mut merged: IndexMap<(PathBuf, String, String, String), KernelRecord> = IndexMap::new();
    for file in csv_files(path)? {
        let f =
            std::fs::File::open(&file).with_context(|| format!("opening {}", file.display()))?;
        let recs = match parse_ncu(f) {
            Ok((_, recs)) => recs,
            Err(NcuError::NoHeader) if !single => continue,
            Err(e) => return Err(e).with_context(|| format!("parsing {}", file.display())),
        };
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        for r in recs {
            let key = (
                dir.clone(),
                r.id.clone(),
                r.process_id.clone(),
                r.kernel_name.clone(),
            );
            match merged.get_mut(&key) {
                Some(existing) => existing.merge(r),
                None => {
                    merged.insert(key, r);
                }
            }
        }
    }
    if merged.is_empty() {
        bail!(
            "no Nsight Compute CSV (header starting \"ID\",) under {}",
            path.display()
        );
    }
    let (peaks, note) = pick_peaks(merged.values(), gpu)?;
    let kernels: Vec<KernelMetrics> = merged.values().map(derive_metrics).collect();
    let points = kernels
        .iter()
        .map(|k| KernelPoint {
            name: k.kernel_name.clone(),
            stage: k.nvtx_range.clone(),
            weight_ns: k.duration_ns.unwrap_or(0.0),
            duration_ns: k.duration_ns,
            flops: k.total_flops,
            intensity: k.arithmetic_intensity,
            precision: k.dominant_precision,
            sm_pct: k.sm_throughput_pct,
            dram_pct: k.dram_throughput_pct,
            why_unknown: k
                .missing
                .get("flops")
                .or_else(|| k.missing.get("arithmetic_intensity"))
                .cloned(),
        })
        .collect();
    let roofline = RooflineReport::build(points, peaks, note, &Thresholds::default());
    Ok(NcuAnalysis { kernels, roofline })
}

fn pick_peaks<'a>(
    mut recs: impl Iterator<Item = &'a KernelRecord>,
    gpu: Option<&str>,
) -> Result<(Option<Peaks>, String)> {
    let resolved = if let Some(props) = recs.find_map(gpu_props_from_record) {
        let origin = format!("the device attributes of {}", props.name);
        resolve_peaks(Ok(props), &origin)
    } else if let Some(name) = gpu {
        let props = props_for_name(name).with_context(|| {
            format!("unknown GPU name {name:?}: known names are \"H100 SXM\", \"H200\", \"RTX 5090\", \"RTX 4090\", \"A100\"")
        })?;
        resolve_peaks(Ok(props), &format!("the GPU name {name:?}"))
    } else {
        resolve_peaks(
            Err("no device__attribute_* columns in the CSV and no GPU name given".into()),
            "",
        )
    };
    Ok(match resolved {
        Ok((p, source)) => (Some(p), source),
        Err(why) => (None, why),
    })
}

/// `llmprof analyze ncu`: markdown tables or JSON (`{peaks, kernels: [...], summary}`).
pub fn analyze_ncu(path: &Path, json: bool, gpu: Option<&str>) -> Result<String> {
    let a = ncu_roofline(path, gpu)?;
    if json {
        let kernels: Vec<serde_json::Value> = a
            .kernels
            .iter()
            .zip(&a.roofline.rows)
            .map(|(k, row)| {
                let mut v = serde_json::to_value(k).expect("kernel metrics serialise");
                v["bound"] = json!(row.bound.class);
                v["bound_reason"] = json!(row.bound.reason);
                v["ridge_intensity"] = json!(row.bound.ridge_intensity);
                v
            })
            .collect();
        let doc = json!({
            "source": path.display().to_string(),
            "peaks": a.roofline.peaks,
            "peaks_note": a.roofline.peaks_note,
            "kernels": kernels,
            "summary": a.roofline.summary,
        });
        return serde_json::to_string_pretty(&doc).context("serialising the ncu analysis");
    }
    let mut md = format!(
        "# ncu analysis: {}\n\nPeaks: {}.\n\n## Kernels\n\n",
        path.display(),
        a.roofline.peaks_note
    );
    md.push_str("| kernel | time (µs) | DRAM read (B) | DRAM write (B) | DRAM total (B) | SM % | DRAM % | occupancy % | FLOPs by precision |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    let opt =
        |v: Option<f64>, d: usize| v.map(|v| format!("{v:.d$}")).unwrap_or_else(|| "—".into());
    let mut notes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for k in &a.kernels {
        let flops: Vec<String> = k
            .flops
            .iter()
            .map(|(p, v)| format!("{} {v:.3e}", p.name()))
            .collect();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            markdown::short_name(&k.kernel_name, 60).replace('|', "\\|"),
            opt(k.duration_ns.map(|v| v / 1e3), 2),
            opt(k.dram_read_bytes, 0),
            opt(k.dram_write_bytes, 0),
            opt(k.dram_bytes, 0),
            opt(k.sm_throughput_pct, 1),
            opt(k.dram_throughput_pct, 1),
            opt(k.achieved_occupancy_pct, 1),
            if flops.is_empty() {
                "—".into()
            } else {
                flops.join(", ")
            }
        );
        for (field, why) in &k.missing {
            notes
                .entry(format!("{field}: {why}"))
                .or_default()
                .push(markdown::short_name(&k.kernel_name, 40));
        }
    }
    md.push('\n');
    md.push_str(&markdown::render(&a.roofline));
    if !notes.is_empty() {
        md.push_str("\n### Missing data\n\n");
        for (note, kernels) in notes {
            let _ = writeln!(
                md,
                "- {note} ({} kernel(s), e.g. {})",
                kernels.len(),
                kernels[0]
            );
        }
    }
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/stage2");

    #[test]
    fn nsys_folder_markdown_and_json() {
        let dir = Path::new(FIX).join("nsys");
        let md = analyze_nsys(&dir, false).expect("md");
        assert!(
            md.contains("## decode_cuda_gpu_kern_sum.csv (cuda_gpu_kern_sum)"),
            "{md}"
        );
        assert!(
            md.contains("| 1 | std::enable_if<!T7, void>::type internal::gemvx::kernel"),
            "{md}"
        );
        assert!(md.contains("61.602"), "total ms of the top decode kernel");
        let js: serde_json::Value =
            serde_json::from_str(&analyze_nsys(&dir, true).expect("json")).expect("valid json");
        let first = &js["reports"][0];
        assert_eq!(first["report"], "cuda_gpu_kern_sum");
        assert_eq!(first["rows"][0]["instances"], 16448);
        assert_eq!(first["rows"][0]["total_ns"], 61602133.0);
    }

    #[test]
    fn nsys_rep_without_nsys_names_the_tool() {
        if find_tool("nsys").is_ok() {
            return; // a real nsys is installed; the error path cannot be exercised here
        }
        let err = analyze_nsys(Path::new("/nonexistent/run.nsys-rep"), false).expect_err("no nsys");
        let msg = format!("{err:#}");
        assert!(
            msg.contains("`nsys` not found") && msg.contains("Nsight Systems"),
            "{msg}"
        );
    }

    #[test]
    fn ncu_h200_peaks_from_device_attributes() {
        let a = ncu_roofline(&Path::new(FIX).join("ncu/h200"), None).expect("analysis");
        let peaks = a
            .roofline
            .peaks
            .as_ref()
            .expect("device attributes present");
        assert_eq!(peaks.gpu_name, "NVIDIA H200");
        assert_eq!(peaks.sm_clock_mhz, 1980.0);
        // ncu_raw.csv (process 445) has IDs 0 and 1; ncu_details.csv is another run (process 509),
        // so its ID 0 stays a separate launch.
        assert_eq!(a.kernels.len(), 3);
        let raw = a
            .kernels
            .iter()
            .position(|k| k.duration_ns == Some(1_656_768.0))
            .expect("raw launch 0");
        assert_eq!(
            a.roofline.rows[raw].bound.class,
            crate::roofline::BoundClass::Unknown
        );
        assert!(
            a.roofline.rows[raw].bound.reason.contains("tensor pipe"),
            "{}",
            a.roofline.rows[raw].bound.reason
        );
        let md = analyze_ncu(&Path::new(FIX).join("ncu/h200"), false, None).expect("md");
        assert!(md.contains("the device attributes of NVIDIA H200"), "{md}");
    }

    #[test]
    fn ncu_rtx5090_with_gpu_name() {
        let dir = Path::new(FIX).join("ncu/rtx5090");
        let js: serde_json::Value =
            serde_json::from_str(&analyze_ncu(&dir, true, Some("RTX 5090")).expect("json"))
                .expect("json");
        let kernels = js["kernels"].as_array().expect("array");
        assert_eq!(kernels.len(), 3, "one per kernel folder");
        assert_eq!(kernels[0]["dram_read_bytes"], 2.33e6);
        assert_eq!(kernels[0]["bound"], "latency_bound"); // SM 9.61 %, DRAM 20.52 %
        assert!(
            kernels[1]["arithmetic_intensity"]
                .as_f64()
                .expect("gemm ai")
                > 100.0
        );
        assert_eq!(js["peaks"]["gpu_name"], "NVIDIA GeForce RTX 5090");
        let without = analyze_ncu(&dir, false, None).expect("md");
        assert!(without.contains("GPU peaks unknown"), "{without}");
        assert!(analyze_ncu(&dir, false, Some("Voodoo 3")).is_err());
    }
}
