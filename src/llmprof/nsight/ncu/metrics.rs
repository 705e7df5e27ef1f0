//! Turns one ncu [`KernelRecord`] into roofline inputs: duration, DRAM bytes, SOL percentages,
//! occupancy, executed FLOPs by precision and the SM/DRAM clocks the kernel ran at. A value that the collected metrics do not give is `None`,
//! with the reason in `missing`; nothing is estimated from peaks or kernel names.
//!
//! Which metric gives which number (raw name first, then the `--page details` display name):
//! - `duration_ns`: `gpu__time_duration.sum` | `GPU Speed Of Light Throughput::Duration`.
//! - `dram_read_bytes` / `dram_write_bytes`: `dram__bytes_read.sum` / `dram__bytes_write.sum`.
//! - `dram_bytes`: read + write; else `dram__bytes.sum`; else `dram__bytes.sum.per_second` (or the
//!   roofline section's `DRAM Bandwidth`) × duration.
//! - `sm_throughput_pct`: `sm__throughput.avg.pct_of_peak_sustained_elapsed` | `Compute (SM) Throughput`.
//! - `dram_throughput_pct`: `dram__throughput.avg.pct_of_peak_sustained_elapsed` |
//!   `gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed` | SOL `DRAM Throughput`.
//! - `achieved_occupancy_pct`: `sm__warps_active.avg.pct_of_peak_sustained_active` | `Achieved Occupancy`.
//! - `sm_clock_hz` / `dram_clock_hz`: `sm__cycles_elapsed.avg.per_second` /
//!   `dram__cycles_elapsed.avg.per_second` | SpeedOfLight `SM Frequency` / `DRAM Frequency`.
//! - FLOPs, scalar pipes (fp64 `d*`, fp32 `f*`, fp16 `h*`), as Nsight Compute's roofline chart
//!   computes them (Kernel Profiling Guide, "Roofline Charts"): `2·FMA + ADD + MUL` thread
//!   instructions from `smsp__sass_thread_inst_executed_op_{p}{fma,add,mul}_pred_on.sum`, or their
//!   `.sum.per_cycle_elapsed` × `smsp__cycles_elapsed.avg.per_second` × duration (display names
//!   `Predicated-On FFMA Thread Instructions Executed Per Cycle` and `SM Frequency` of the
//!   `GPU Speed Of Light Roofline Chart` section). `flop_count_{sp,dp,hp}.sum` are used as FLOPs when
//!   numeric (they are `n/a` on Blackwell/Hopper).
//! - FLOPs, tensor pipes: `sm__ops_path_tensor_src_<src>[_dst_<dst>][_sparsity_*].sum` (or
//!   `.sum.per_cycle_elapsed` × `sm__cycles_elapsed.avg.per_second` × duration), counted as FLOPs
//!   (ncu counts one MMA multiply-add as two ops), grouped by source precision; integer paths are
//!   not FLOPs and are skipped.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use crate::roofline::precision::Precision;
use regex::Regex;
use serde::Serialize;

use super::parse::{KernelRecord, Value};

/// Tensor pipe activity above which unknown tensor FLOPs make the intensity unknown (percent of
/// peak). A kernel without any MMA reads 0 on this counter; 1 % leaves room for counter noise.
pub const TENSOR_PIPE_IDLE_PCT: f64 = 1.0;

/// Roofline inputs for one kernel launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelMetrics {
    pub kernel_name: String,
    pub id: String,
    /// Innermost NVTX range around the launch, when ncu ran with `--nvtx`.
    pub nvtx_range: Option<String>,
    pub duration_ns: Option<f64>,
    pub dram_read_bytes: Option<f64>,
    pub dram_write_bytes: Option<f64>,
    pub dram_bytes: Option<f64>,
    pub sm_throughput_pct: Option<f64>,
    pub dram_throughput_pct: Option<f64>,
    pub achieved_occupancy_pct: Option<f64>,
    pub tensor_pipe_pct: Option<f64>,
    /// Executed FLOPs by precision (ncu's counts: tensor-pipe ops include tile padding), only for
    /// precisions whose counters were collected.
    pub flops: BTreeMap<Precision, f64>,
    /// Executed FLOPs, all precisions.
    pub total_flops: Option<f64>,
    /// The precision with the most FLOPs: it picks the compute roof.
    pub dominant_precision: Option<Precision>,
    /// Executed FLOP per DRAM byte.
    pub arithmetic_intensity: Option<f64>,
    /// SM clock ncu measured over the kernel (Hz): `sm__cycles_elapsed.avg.per_second`, else
    /// `smsp__cycles_elapsed.avg.per_second` or the `SM Frequency` of the SpeedOfLight sections.
    pub sm_clock_hz: Option<f64>,
    /// DRAM clock ncu measured over the kernel (Hz): `dram__cycles_elapsed.avg.per_second`, else
    /// the `DRAM Frequency` of the SpeedOfLight sections.
    pub dram_clock_hz: Option<f64>,
    /// Field name → why it is `None` (or why it is only a lower bound).
    pub missing: BTreeMap<String, String>,
}

/// Metrics [`derive`] and the peak lookup (`device__attribute_*`, `analysis.rs`) read by exact key.
const USED: [&str; 29] = [
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__bytes.sum",
    "dram__bytes.sum.per_second",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_elapsed",
    "flop_count_dp.sum",
    "flop_count_sp.sum",
    "flop_count_hp.sum",
    "sm__cycles_elapsed.avg.per_second",
    "smsp__cycles_elapsed.avg.per_second",
    "dram__cycles_elapsed.avg.per_second",
    "Occupancy::Achieved Occupancy",
    "device__attribute_display_name",
    "device__attribute_compute_capability_major",
    "device__attribute_compute_capability_minor",
    "device__attribute_multiprocessor_count",
    "device__attribute_max_gpu_frequency_khz",
    "device__attribute_max_mem_frequency_khz",
    "device__attribute_memory_clock_rate",
    "device__attribute_global_memory_bus_width",
    "device__attribute_clock_rate",
    "device__attribute_architecture",
    "device__attribute_chip",
];

/// True for the metric keys the analysis reads: `llmprof analyze ncu` keeps only these, so its
/// memory grows with the kernels, not with the 600-odd columns of a raw export. A metric that
/// [`derive`] starts reading must be added here (the tests compare [`derive`] on full and
/// filtered records of every fixture).
pub fn is_used(key: &str) -> bool {
    let scalar = key.starts_with("smsp__sass_thread_inst_executed_op_")
        || key.starts_with("sm__sass_thread_inst_executed_op_");
    let tensor = key.starts_with("sm__ops_path_tensor_src_");
    USED.contains(&key)
        || key.starts_with(SOL)
        || key.starts_with(ROOF)
        || (scalar
            && (key.ends_with("_pred_on.sum") || key.ends_with("_pred_on.sum.per_cycle_elapsed")))
        || (tensor && (key.ends_with(".sum") || key.ends_with(".sum.per_cycle_elapsed")))
}

fn first(rec: &KernelRecord, keys: &[&str]) -> Option<f64> {
    keys.iter().find_map(|k| rec.number(k))
}

const ROOF: &str = "GPU Speed Of Light Roofline Chart::";
const SOL: &str = "GPU Speed Of Light Throughput::";

/// Derives roofline inputs from one kernel's metrics.
pub fn derive(rec: &KernelRecord) -> KernelMetrics {
    let mut missing = BTreeMap::new();
    let mut note = |field: &str, why: String| {
        missing.insert(field.to_string(), why);
    };
    let duration_ns = first(rec, &["gpu__time_duration.sum", &format!("{SOL}Duration")]);
    if duration_ns.is_none() {
        note(
            "duration_ns",
            "no gpu__time_duration.sum or SpeedOfLight Duration".into(),
        );
    }
    let read = rec.number("dram__bytes_read.sum");
    let write = rec.number("dram__bytes_write.sum");
    if read.is_none() {
        note(
            "dram_read_bytes",
            "dram__bytes_read.sum not collected".into(),
        );
    }
    if write.is_none() {
        note(
            "dram_write_bytes",
            "dram__bytes_write.sum not collected".into(),
        );
    }
    let rate = first(
        rec,
        &[
            "dram__bytes.sum.per_second",
            &format!("{ROOF}DRAM Bandwidth"),
        ],
    );
    let dram_bytes = match (read, write) {
        (Some(r), Some(w)) => Some(r + w),
        _ => rec
            .number("dram__bytes.sum")
            .or_else(|| Some(rate? * duration_ns? * 1e-9)),
    };
    if dram_bytes.is_none() {
        note(
            "dram_bytes",
            "no dram__bytes_{read,write}.sum, dram__bytes.sum or DRAM bandwidth × duration".into(),
        );
    }
    let sm_throughput_pct = first(
        rec,
        &[
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            &format!("{SOL}Compute (SM) Throughput"),
        ],
    );
    let dram_throughput_pct = first(
        rec,
        &[
            "dram__throughput.avg.pct_of_peak_sustained_elapsed",
            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
            &format!("{SOL}DRAM Throughput"),
        ],
    );
    let achieved_occupancy_pct = first(
        rec,
        &[
            "sm__warps_active.avg.pct_of_peak_sustained_active",
            "Occupancy::Achieved Occupancy",
        ],
    );
    for (field, v) in [
        ("sm_throughput_pct", sm_throughput_pct),
        ("dram_throughput_pct", dram_throughput_pct),
        ("achieved_occupancy_pct", achieved_occupancy_pct),
    ] {
        if v.is_none() {
            note(
                field,
                "metric not collected (SpeedOfLight / Occupancy sections)".into(),
            );
        }
    }
    let tensor_pipe_pct = first(
        rec,
        &[
            "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_elapsed",
        ],
    );

    let mut flops = BTreeMap::new();
    for (p, letter, legacy) in [
        (Precision::Fp64, 'd', "flop_count_dp.sum"),
        (Precision::Fp32, 'f', "flop_count_sp.sum"),
        (Precision::Fp16, 'h', "flop_count_hp.sum"),
    ] {
        if let Some(v) = scalar_flops(rec, letter, legacy, duration_ns) {
            flops.insert(p, v);
        }
    }
    let scalar_known = flops.contains_key(&Precision::Fp32);
    let tensor = tensor_flops(rec, duration_ns);
    let tensor_known = !tensor.is_empty();
    flops.extend(tensor);

    let total: f64 = flops.values().sum();
    let dominant_precision = flops
        .iter()
        .filter(|(_, v)| **v > 0.0)
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(p, _)| *p);
    let tensor_busy = tensor_pipe_pct.is_some_and(|p| p > TENSOR_PIPE_IDLE_PCT);
    let mut total_flops = None;
    if flops.is_empty() {
        note("flops", "no FLOP counters collected (add --section SpeedOfLight_RooflineChart and sm__ops_path_tensor_* metrics)".into());
    } else if !tensor_known && (tensor_busy || tensor_pipe_pct.is_none()) {
        let why = match tensor_pipe_pct {
            Some(p) => format!("tensor pipe {p:.1} % busy but no sm__ops_path_tensor_* counters collected"),
            None => "tensor-core FLOPs unknown: no sm__ops_path_tensor_* counters and no tensor pipe utilisation".into(),
        };
        note("flops", why);
    } else {
        total_flops = Some(total);
        if !scalar_known {
            note(
                "flops",
                "lower bound: fp32 instruction counters not collected".into(),
            );
        }
    }
    let arithmetic_intensity = match (total_flops, dram_bytes) {
        (Some(f), Some(b)) if b > 0.0 => Some(f / b),
        (Some(_), Some(_)) => {
            note("arithmetic_intensity", "no DRAM traffic (0 bytes)".into());
            None
        }
        _ => {
            note(
                "arithmetic_intensity",
                "needs both FLOPs and DRAM bytes".into(),
            );
            None
        }
    };
    let sm_clock_hz = first(
        rec,
        &[
            "sm__cycles_elapsed.avg.per_second",
            "smsp__cycles_elapsed.avg.per_second",
            &format!("{SOL}SM Frequency"),
            &format!("{ROOF}SM Frequency"),
        ],
    );
    let dram_clock_hz = first(
        rec,
        &[
            "dram__cycles_elapsed.avg.per_second",
            &format!("{SOL}DRAM Frequency"),
            &format!("{ROOF}DRAM Frequency"),
        ],
    );
    for (field, v, metric) in [
        (
            "sm_clock_hz",
            sm_clock_hz,
            "sm__cycles_elapsed.avg.per_second",
        ),
        (
            "dram_clock_hz",
            dram_clock_hz,
            "dram__cycles_elapsed.avg.per_second",
        ),
    ] {
        if v.is_none() {
            note(
                field,
                format!("{metric} not collected: the roofs use the rated clock"),
            );
        }
    }
    KernelMetrics {
        kernel_name: rec.kernel_name.clone(),
        id: rec.id.clone(),
        nvtx_range: rec.nvtx_ranges.last().cloned(),
        duration_ns,
        dram_read_bytes: read,
        dram_write_bytes: write,
        dram_bytes,
        sm_throughput_pct,
        dram_throughput_pct,
        achieved_occupancy_pct,
        tensor_pipe_pct,
        flops,
        total_flops,
        dominant_precision,
        arithmetic_intensity,
        sm_clock_hz,
        dram_clock_hz,
        missing,
    }
}

/// `2·FMA + ADD + MUL` for one scalar precision (`letter` = d, f or h).
fn scalar_flops(
    rec: &KernelRecord,
    letter: char,
    legacy: &str,
    duration_ns: Option<f64>,
) -> Option<f64> {
    if let Some(v) = rec.number(legacy) {
        return Some(v);
    }
    let op = |name: &str, suffix: &str| {
        first(
            rec,
            &[
                &format!("smsp__sass_thread_inst_executed_op_{letter}{name}_pred_on{suffix}"),
                &format!("sm__sass_thread_inst_executed_op_{letter}{name}_pred_on{suffix}"),
            ],
        )
    };
    let combine = |fma: f64, add: Option<f64>, mul: Option<f64>| {
        2.0 * fma + add.unwrap_or(0.0) + mul.unwrap_or(0.0)
    };
    if let Some(fma) = op("fma", ".sum") {
        return Some(combine(fma, op("add", ".sum"), op("mul", ".sum")));
    }
    let up = letter.to_ascii_uppercase();
    let display = |name: &str| {
        rec.number(&format!(
            "{ROOF}Predicated-On {up}{name} Thread Instructions Executed Per Cycle"
        ))
    };
    let per_cycle = match op("fma", ".sum.per_cycle_elapsed") {
        Some(fma) => combine(
            fma,
            op("add", ".sum.per_cycle_elapsed"),
            op("mul", ".sum.per_cycle_elapsed"),
        ),
        None => combine(display("FMA")?, display("ADD"), display("MUL")),
    };
    let hz = first(
        rec,
        &[
            "smsp__cycles_elapsed.avg.per_second",
            &format!("{ROOF}SM Frequency"),
        ],
    )?;
    Some(per_cycle * hz * duration_ns? * 1e-9)
}

fn tensor_precision(src: &str) -> Option<Precision> {
    match src {
        "fp64" => Some(Precision::TensorFp64),
        "tf32" => Some(Precision::TensorTf32),
        "fp16" => Some(Precision::TensorFp16),
        "bf16" => Some(Precision::TensorBf16),
        "fp8" | "e4m3" | "e5m2" => Some(Precision::TensorFp8),
        _ => None, // integer paths (int8, int4, ...) count ops, not FLOPs
    }
}

fn tensor_flops(rec: &KernelRecord, duration_ns: Option<f64>) -> BTreeMap<Precision, f64> {
    static RE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^sm__ops_path_tensor_src_([a-z0-9]+?)(?:_dst_([a-z0-9]+?))?(_sparsity_(?:on|off))?\.sum(\.per_cycle_elapsed)?$")
            .expect("static regex is valid")
    });
    let re = &*RE;
    let sm_hz = rec.number("sm__cycles_elapsed.avg.per_second");
    // (src, dst) → (plain value, sparsity-split sum)
    let mut paths: BTreeMap<(String, String), (Option<f64>, Option<f64>)> = BTreeMap::new();
    for (key, metric) in &rec.metrics {
        let Some(c) = re.captures(key.as_str()) else {
            continue;
        };
        let Value::Number(v) = metric.value else {
            continue;
        };
        let count = if c.get(4).is_some() {
            match (sm_hz, duration_ns) {
                (Some(hz), Some(ns)) => v * hz * ns * 1e-9,
                _ => continue,
            }
        } else {
            v
        };
        let src = c[1].to_string();
        let dst = c.get(2).map(|m| m.as_str().to_string()).unwrap_or_default();
        let slot = paths.entry((src, dst)).or_default();
        if c.get(3).is_some() {
            slot.1 = Some(slot.1.unwrap_or(0.0) + count);
        } else if slot.0.is_none() {
            slot.0 = Some(count);
        }
    }
    let mut out = BTreeMap::new();
    let srcs_with_dst: Vec<String> = paths
        .keys()
        .filter(|(_, d)| !d.is_empty())
        .map(|(s, _)| s.clone())
        .collect();
    for ((src, dst), (plain, split)) in paths {
        if dst.is_empty() && srcs_with_dst.contains(&src) {
            continue; // the per-destination paths already cover this source
        }
        let Some(p) = tensor_precision(&src) else {
            continue;
        };
        if let Some(v) = plain.or(split) {
            *out.entry(p).or_insert(0.0) += v;
        }
    }
    out
}

#[cfg(test)]
mod tests;
