//! `llmprof analyze nsys|ncu PATH`: read Nsight exports from a file or folder and render them as
//! markdown tables or JSON. Pure reading and formatting, except that a `.nsys-rep` is first
//! exported with `nsys stats`. The ncu half lives in `ncu::analysis` (re-exported here).

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::json;

use super::csv_input::{list_csv_files, rel};
pub use super::ncu::analysis::{
    analyze_ncu, cuda_clock_rate_mhz, gpu_props_from_record, ncu_roofline, NcuAnalysis,
};
use super::nsys::command::{stats_args, stats_output_path};
use super::nsys::parse::{parse_report, Error as NsysError, Report, ReportKind};
use super::tool::find_tool;

/// Kernel rows shown per nsys report in markdown (JSON has all).
const MD_ROWS: usize = 25;

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
    let listing = list_csv_files(&base)?;
    let not_regular: Vec<String> = listing
        .skipped
        .iter()
        .map(|s| format!("{} ({})", rel(&base, &s.path), s.kind.describe()))
        .collect();
    for file in listing.files {
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
        let mut doc = json!({ "source": path.display().to_string(), "reports": list, "skipped_files": skipped });
        if !not_regular.is_empty() {
            doc["not_regular_files"] = json!(not_regular);
        }
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
    if !not_regular.is_empty() {
        let _ = writeln!(
            md,
            "\nSkipped (not a regular file): {}",
            not_regular.join(", ")
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
                    crate::measure::kernel_names::short_name_within(&k.kernel_name, 80)
                        .replace('|', "\\|"),
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
            md.contains("| 1 | internal::gemvx::kernel<int, int, __nv_bfloat16"),
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
}
