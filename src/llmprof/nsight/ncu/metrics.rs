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
    let re = Regex::new(r"^sm__ops_path_tensor_src_([a-z0-9]+?)(?:_dst_([a-z0-9]+?))?(_sparsity_(?:on|off))?\.sum(\.per_cycle_elapsed)?$")
        .expect("static regex is valid");
    let sm_hz = rec.number("sm__cycles_elapsed.avg.per_second");
    // (src, dst) → (plain value, sparsity-split sum)
    let mut paths: BTreeMap<(String, String), (Option<f64>, Option<f64>)> = BTreeMap::new();
    for (key, metric) in &rec.metrics {
        let Some(c) = re.captures(key) else { continue };
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
mod tests {
    use super::*;
    use crate::nsight::ncu::parse::{parse, KernelRecord};

    const DIR: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/stage2/ncu"
    );

    fn merged(dir: &str) -> KernelRecord {
        let mut rec: Option<KernelRecord> = None;
        for f in [
            "ncu.metrics.csv",
            "ncu.details.csv",
            "ncu.section_SpeedOfLight_RooflineChart.csv",
        ] {
            let file = std::fs::File::open(format!("{DIR}/{dir}/{f}")).expect("fixture");
            let (_, mut recs) = parse(file).expect("parses");
            let r = recs.remove(0);
            match rec.as_mut() {
                Some(a) => a.merge(r),
                None => rec = Some(r),
            }
        }
        rec.expect("three files")
    }

    #[test]
    fn gemv_is_about_one_flop_per_byte() {
        // kernel_0001 (cuBLAS bf16 GEMV, fp32 FFMA, no tensor ops): 2.33 Mbyte read, 0 written;
        // FFMA 83.00 + FADD 2.07 inst/cycle at 2.14 GHz over 6.46 us ≈ 2.3 MFLOP ⇒ ≈ 1 FLOP/byte.
        let m = derive(&merged("rtx5090/kernel_0001_gemv"));
        assert_eq!(m.dram_bytes, Some(2.33e6));
        assert_eq!(m.flops.get(&Precision::TensorBf16), Some(&0.0));
        assert_eq!(m.dominant_precision, Some(Precision::Fp32));
        assert_eq!(m.sm_throughput_pct, Some(9.61));
        assert_eq!(m.dram_throughput_pct, Some(20.52));
        assert_eq!(m.achieved_occupancy_pct, Some(11.68));
        let ai = m.arithmetic_intensity.expect("intensity");
        assert!((0.5..2.0).contains(&ai), "GEMV intensity {ai}");
    }

    #[test]
    fn gemm_is_hundreds_of_flops_per_byte() {
        // kernel_0003 (CUTLASS bf16 tensor-op GEMM): 603,979,776 bf16→fp32 tensor ops, 2.64 Mbyte read.
        let m = derive(&merged("rtx5090/kernel_0003_gemm"));
        assert_eq!(m.flops.get(&Precision::TensorBf16), Some(&603_979_776.0));
        assert_eq!(m.dominant_precision, Some(Precision::TensorBf16));
        let ai = m.arithmetic_intensity.expect("intensity");
        assert!((100.0..1000.0).contains(&ai), "GEMM intensity {ai}");
        // kernel_0005: 17,666,408,448 tensor ops over 11.14 Mbyte read + 512 byte written.
        let m = derive(&merged("rtx5090/kernel_0005_gemm"));
        assert_eq!(m.dram_bytes, Some(11.14e6 + 512.0));
        let ai = m.arithmetic_intensity.expect("intensity");
        assert!(ai > 1000.0, "large GEMM intensity {ai}");
        // No raw clock counters in these exports: SpeedOfLight's SM / DRAM Frequency.
        assert_eq!(m.sm_clock_hz, Some(2.00e9));
        assert_eq!(m.dram_clock_hz, Some(13.78e9));
    }

    #[test]
    fn metrics_csv_alone_is_a_lower_bound() {
        let file = std::fs::File::open(format!("{DIR}/rtx5090/kernel_0003_gemm/ncu.metrics.csv"))
            .expect("fixture");
        let (_, recs) = parse(file).expect("parses");
        let m = derive(&recs[0]);
        assert_eq!(m.total_flops, Some(603_979_776.0));
        assert!(
            m.missing["flops"].contains("lower bound"),
            "{:?}",
            m.missing
        );
        assert_eq!(m.achieved_occupancy_pct, None);
    }

    #[test]
    fn h200_raw_tensor_busy_without_tensor_counters() {
        // ncu_raw.csv: bf16 8192³ nvjet GEMM, tensor pipe 93.32 % busy, no sm__ops_path_tensor_*.
        let file = std::fs::File::open(format!("{DIR}/h200/ncu_raw.csv")).expect("fixture");
        let (_, recs) = parse(file).expect("parses");
        let m = derive(&recs[0]);
        assert_eq!(m.duration_ns, Some(1_656_768.0));
        assert_eq!(m.tensor_pipe_pct, Some(93.32));
        assert_eq!(m.sm_throughput_pct, Some(93.32));
        assert_eq!(m.dram_throughput_pct, Some(17.61));
        assert_eq!(m.achieved_occupancy_pct, Some(14.78));
        assert_eq!(m.flops.get(&Precision::Fp32), Some(&0.0));
        assert_eq!(m.total_flops, None);
        assert_eq!(m.arithmetic_intensity, None);
        assert!(
            m.missing["flops"].contains("tensor pipe 93.3 % busy"),
            "{:?}",
            m.missing
        );
        // 847,457,024,761.46 byte/s × 1,656,768 ns
        let bytes = m.dram_bytes.expect("from rate × duration");
        assert!((bytes - 847_457_024_761.46 * 1_656_768e-9).abs() < 1.0);
        assert_eq!(m.dram_read_bytes, None);
        assert_eq!(m.nvtx_range.as_deref(), Some("matmul-loop"));
        // ncu locked the clocks: the kernel ran at 1336 MHz, not NVML's 1980 MHz maximum.
        assert_eq!(m.sm_clock_hz, Some(1_335_883_058.48));
        assert_eq!(m.dram_clock_hz, Some(3_199_427_640.64));
    }
}
