//! `llmprof analyze ncu` and stage 2's roofline: reads ncu CSV exports (a folder, recursively, or
//! one file), merges the exports of one launch, derives each kernel's metrics, resolves the GPU's
//! datasheet peaks (device attributes, else a board name) and classifies each kernel against the
//! roofs at the SM and DRAM clocks ncu measured over it. Kernels a caller maps to a model op get
//! useful (analytic) FLOPs beside ncu's executed FLOPs.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use indexmap::IndexMap;

use serde::Serialize;

use super::metrics::{derive as derive_metrics, is_used, KernelMetrics};
use super::parse::{parse_with, Error as NcuError, KernelRecord, Value};
use crate::dataset::file_kind::Skipped;
use crate::measure::peaks::{
    props_for_name, resolve as resolve_peaks, sku, ClockSource, GpuProps, Peaks,
};
use crate::nsight::csv_input::list_csv_files;
use crate::roofline::{
    markdown, useful, BoundClass, ClassShare, KernelOps, KernelPoint, RooflineReport, Thresholds,
};

/// GPU properties from ncu `device__attribute_*` columns (raw page), when the display name is
/// there; the other attributes are taken when present.
pub fn gpu_props_from_record(rec: &KernelRecord) -> Option<GpuProps> {
    let n = |k: &str| rec.number(&format!("device__attribute_{k}"));
    let name = match &rec.metrics.get("device__attribute_display_name")?.value {
        Value::Text(s) => s.to_string(),
        _ => return None,
    };
    let cc = match (n("compute_capability_major"), n("compute_capability_minor")) {
        (Some(major), Some(minor)) => Some((major as u32, minor as u32)),
        _ => None,
    };
    Some(GpuProps {
        name,
        compute_capability: cc,
        sm_count: n("multiprocessor_count").map(|v| v as u32),
        max_sm_clock_mhz: n("max_gpu_frequency_khz").map(|v| v / 1e3),
        max_mem_clock_mhz: n("max_mem_frequency_khz")
            .or_else(|| n("memory_clock_rate"))
            .map(|v| v / 1e3),
        memory_bus_width_bits: n("global_memory_bus_width").map(|v| v as u32),
        ..GpuProps::default()
    })
}

/// The CUDA clock-rate attribute ncu recorded (`device__attribute_clock_rate`, kHz), in MHz.
pub fn cuda_clock_rate_mhz(rec: &KernelRecord) -> Option<f64> {
    rec.number("device__attribute_clock_rate").map(|v| v / 1e3)
}

/// Parsed ncu kernels and their roofline (rows in the order of `kernels`).
pub struct NcuAnalysis {
    pub kernels: Vec<KernelMetrics>,
    pub roofline: RooflineReport,
    /// `*.csv` entries that are not regular files (FIFOs, symlink loops, ...), not read.
    pub skipped: Vec<Skipped>,
}

/// [`ncu_roofline_with`] without kernel → op mappings.
pub fn ncu_roofline(path: &Path, gpu: Option<&str>) -> Result<NcuAnalysis> {
    ncu_roofline_with(path, gpu, &KernelOps::default())
}

/// Reads ncu CSVs under `path` (folder, recursive, or one file), merges the exports of one launch
/// (same folder, ID, process and kernel name) and classifies each kernel. Peaks come from the
/// device attributes in a raw CSV, else from the board name `gpu`, else are unknown (bounds say
/// so). Each kernel gets its modules from `ops` and, where one of its rules matches, that op's
/// analytic FLOPs as its useful FLOPs.
/// Each CSV is streamed and only the metrics the analysis reads are kept
/// ([`super::metrics::is_used`]).
pub fn ncu_roofline_with(path: &Path, gpu: Option<&str>, ops: &KernelOps) -> Result<NcuAnalysis> {
    let single = path.is_file();
    let mut merged: IndexMap<(PathBuf, String, String, String), KernelRecord> = IndexMap::new();
    let listing = list_csv_files(path)?;
    for file in &listing.files {
        let f = std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
        let recs = match parse_with(f, is_used) {
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
        anyhow::bail!(
            "no Nsight Compute CSV (header starting \"ID\",) under {}",
            path.display()
        );
    }
    let (peaks, note) = pick_peaks(merged.values(), gpu)?;
    let kernels: Vec<KernelMetrics> = merged.values().map(derive_metrics).collect();
    let points = kernels.iter().map(|k| point(k, ops)).collect();
    let roofline = RooflineReport::build(points, peaks, note, &Thresholds::default());
    Ok(NcuAnalysis {
        kernels,
        roofline,
        skipped: listing.skipped,
    })
}

fn point(k: &KernelMetrics, ops: &KernelOps) -> KernelPoint {
    let stage = k.nvtx_range.as_deref();
    let op = useful::find(
        &ops.rules,
        &useful::Launch {
            kernel_name: &k.kernel_name,
            stage: k.nvtx_range.as_deref(),
            dram_read_bytes: k.dram_read_bytes,
            executed_flops: k.total_flops,
        },
    );
    KernelPoint {
        name: k.kernel_name.clone(),
        stage: k.nvtx_range.clone(),
        weight_ns: k.duration_ns.unwrap_or(0.0),
        duration_ns: k.duration_ns,
        executed_flops: k.total_flops,
        executed_intensity: k.arithmetic_intensity,
        dram_bytes: k.dram_bytes,
        useful_flops: op.map(|o| o.flops_per_launch),
        useful_op: op.map(|o| o.op.clone()),
        modules: ops
            .modules_of(stage, &k.kernel_name)
            .map(<[String]>::to_vec)
            .unwrap_or_default(),
        useful_why_not: op
            .is_none()
            .then(|| ops.no_flops_reason(stage, &k.kernel_name).map(String::from))
            .flatten(),
        precision: k.dominant_precision,
        sm_pct: k.sm_throughput_pct,
        dram_pct: k.dram_throughput_pct,
        sm_clock_mhz: k.sm_clock_hz.map(|hz| hz / 1e6),
        dram_clock_mhz: k.dram_clock_hz.map(|hz| hz / 1e6),
        why_unknown: k
            .missing
            .get("flops")
            .or_else(|| k.missing.get("arithmetic_intensity"))
            .cloned(),
    }
}

fn pick_peaks<'a>(
    mut recs: impl Iterator<Item = &'a KernelRecord>,
    gpu: Option<&str>,
) -> Result<(Option<Peaks>, String)> {
    let resolved = if let Some((props, clock)) =
        recs.find_map(|r| gpu_props_from_record(r).map(|p| (p, cuda_clock_rate_mhz(r))))
    {
        let origin = format!("the device attributes of {}", props.name);
        resolve_peaks(Ok(props), clock, &origin)
    } else if let Some(name) = gpu {
        let props = props_for_name(name).with_context(|| {
            format!(
                "unknown GPU name '{name}': known boards are {}",
                sku::known_names().join(", ")
            )
        })?;
        resolve_peaks(Ok(props), None, &format!("the GPU name '{name}'"))
    } else {
        resolve_peaks(
            Err("no device__attribute_* columns in the CSV and no GPU name given".into()),
            None,
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
    render(path, &ncu_roofline(path, gpu)?, json)
}

/// The JSON document of `llmprof analyze ncu --format json`, serialised in one pass (no
/// intermediate `serde_json::Value` per kernel).
#[derive(Serialize)]
struct Doc<'a> {
    source: String,
    peaks: &'a Option<Peaks>,
    peaks_note: &'a str,
    flops_note: &'static str,
    kernels: Vec<KernelJson<'a>>,
    summary: &'a [ClassShare],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    skipped_files: &'a [Skipped],
}

/// One kernel: its metrics, then its roofline placement.
#[derive(Serialize)]
struct KernelJson<'a> {
    #[serde(flatten)]
    metrics: &'a KernelMetrics,
    executed_flops: Option<f64>,
    executed_intensity: Option<f64>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    modules: &'a [String],
    useful_op: Option<&'a str>,
    useful_flops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    useful_why_not: Option<&'a str>,
    useful_intensity: Option<f64>,
    bound: &'a BoundClass,
    bound_reason: &'a str,
    ridge_intensity: Option<f64>,
    ridge_sm_clock_mhz: Option<f64>,
    ridge_sm_clock_source: &'a Option<ClockSource>,
    ridge_dram_clock_mhz: Option<f64>,
    ridge_dram_clock_source: &'a Option<ClockSource>,
}

/// What `flops`, `total_flops` and `arithmetic_intensity` of the JSON mean.
const FLOPS_NOTE: &str = "flops, total_flops, executed_flops, arithmetic_intensity and executed_intensity count executed FLOPs as ncu does: tensor-pipe ops include tile padding. modules are the modules stage 1's attribution saw launch the kernel; useful_flops/useful_intensity are that module's analytic FLOPs where they belong to this kernel alone (useful_why_not says why not). ridge_intensity is at ridge_sm_clock_mhz / ridge_dram_clock_mhz (the clocks ncu measured over the kernel when ridge_*_clock_source is measured).";

/// Renders an analysis of the exports at `source` as markdown or JSON.
pub fn render(source: &Path, a: &NcuAnalysis, json: bool) -> Result<String> {
    if json {
        let kernels: Vec<KernelJson> = a
            .kernels
            .iter()
            .zip(&a.roofline.rows)
            .map(|(k, row)| KernelJson {
                metrics: k,
                executed_flops: row.point.executed_flops,
                executed_intensity: row.point.executed_intensity,
                modules: &row.point.modules,
                useful_op: row.point.useful_op.as_deref(),
                useful_flops: row.point.useful_flops,
                useful_why_not: row.point.useful_why_not.as_deref(),
                useful_intensity: row.point.useful_intensity(),
                bound: &row.bound.class,
                bound_reason: &row.bound.reason,
                ridge_intensity: row.bound.ridge_intensity,
                ridge_sm_clock_mhz: row.bound.ridge_sm_clock_mhz,
                ridge_sm_clock_source: &row.bound.ridge_sm_clock_source,
                ridge_dram_clock_mhz: row.bound.ridge_dram_clock_mhz,
                ridge_dram_clock_source: &row.bound.ridge_dram_clock_source,
            })
            .collect();
        let doc = Doc {
            source: source.display().to_string(),
            peaks: &a.roofline.peaks,
            peaks_note: &a.roofline.peaks_note,
            flops_note: FLOPS_NOTE,
            kernels,
            summary: &a.roofline.summary,
            skipped_files: &a.skipped,
        };
        return serde_json::to_string_pretty(&doc).context("serialising the ncu analysis");
    }
    let mut md = format!(
        "# ncu analysis: {}\n\nPeaks: {}.\n\n## Kernels\n\n",
        source.display(),
        a.roofline.peaks_note
    );
    md.push_str("| kernel | time (µs) | DRAM read (B) | DRAM write (B) | DRAM total (B) | SM % | DRAM % | occupancy % | SM MHz | DRAM MHz | executed FLOPs by precision |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
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
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            crate::measure::kernel_names::short_name_within(&k.kernel_name, 60).replace('|', "\\|"),
            opt(k.duration_ns.map(|v| v / 1e3), 2),
            opt(k.dram_read_bytes, 0),
            opt(k.dram_write_bytes, 0),
            opt(k.dram_bytes, 0),
            opt(k.sm_throughput_pct, 1),
            opt(k.dram_throughput_pct, 1),
            opt(k.achieved_occupancy_pct, 1),
            opt(k.sm_clock_hz.map(|v| v / 1e6), 0),
            opt(k.dram_clock_hz.map(|v| v / 1e6), 0),
            if flops.is_empty() {
                "—".into()
            } else {
                flops.join(", ")
            }
        );
        for (field, why) in &k.missing {
            notes.entry(format!("{field}: {why}")).or_default().push(
                crate::measure::kernel_names::short_name_within(&k.kernel_name, 40),
            );
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
    if !a.skipped.is_empty() {
        md.push_str("\n### Skipped (not regular files)\n\n");
        for s in &a.skipped {
            let _ = writeln!(md, "- {s}");
        }
    }
    Ok(md)
}

#[cfg(test)]
mod tests;
