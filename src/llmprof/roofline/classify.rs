//! Classifies one kernel as memory-, compute-, latency-bound or balanced from its executed
//! arithmetic intensity, the ridge point of its dominant precision at the clocks the kernel ran
//! at, and its SOL utilisation.

use std::collections::BTreeMap;

use serde::Serialize;

use super::precision::Precision;
use crate::measure::peaks::{ClockSource, Peaks};

/// One kernel as the roofline sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelPoint {
    pub name: String,
    /// Stage (NVTX region) the kernel ran in, when known; plots group by it.
    pub stage: Option<String>,
    /// GPU time this kernel stands for in summaries (its duration, or an nsys total).
    pub weight_ns: f64,
    pub duration_ns: Option<f64>,
    /// Executed FLOPs as ncu counts them: tensor-pipe ops include tile padding (a batch-1 GEMV
    /// on an n=8 tile executes 8× its math).
    pub executed_flops: Option<f64>,
    /// Executed FLOP per DRAM byte; the roofline places and classifies kernels by it.
    pub executed_intensity: Option<f64>,
    pub dram_bytes: Option<f64>,
    /// The model's analytic FLOPs of the op this kernel computes, when a caller mapped it to one
    /// (see [`super::useful::UsefulFlops`]).
    pub useful_flops: Option<f64>,
    /// That op's name (e.g. "lm_head").
    pub useful_op: Option<String>,
    /// The modules stage 1's attribution saw launch this kernel, most time first (empty when
    /// unknown: `llmprof analyze ncu` on foreign exports).
    pub modules: Vec<String>,
    /// Why a kernel with known modules has no useful FLOPs.
    pub useful_why_not: Option<String>,
    /// Dominant precision; `None` when the kernel did no floating-point work (copies, casts).
    pub precision: Option<Precision>,
    pub sm_pct: Option<f64>,
    pub dram_pct: Option<f64>,
    /// SM and DRAM clocks the profiler measured over this kernel (MHz); the roofs use them.
    pub sm_clock_mhz: Option<f64>,
    pub dram_clock_mhz: Option<f64>,
    /// Why `executed_intensity` is `None`, when it is.
    pub why_unknown: Option<String>,
}

impl KernelPoint {
    /// Achieved executed FLOP/s, when FLOPs and duration are known.
    pub fn flops_per_s(&self) -> Option<f64> {
        match (self.executed_flops, self.duration_ns) {
            (Some(f), Some(ns)) if ns > 0.0 => Some(f / (ns * 1e-9)),
            _ => None,
        }
    }

    /// Useful (analytic) FLOP per DRAM byte, when the kernel maps to a model op.
    pub fn useful_intensity(&self) -> Option<f64> {
        match (self.useful_flops, self.dram_bytes) {
            (Some(f), Some(b)) if b > 0.0 => Some(f / b),
            _ => None,
        }
    }
}

/// The class a kernel falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundClass {
    MemoryBound,
    ComputeBound,
    Balanced,
    LatencyBound,
    Unknown,
}

impl BoundClass {
    /// The class's colour in every plot (roofline.svg, report.html).
    pub fn color(self) -> &'static str {
        match self {
            BoundClass::MemoryBound => "#1f77b4",
            BoundClass::ComputeBound => "#d62728",
            BoundClass::Balanced => "#9467bd",
            BoundClass::LatencyBound => "#ff7f0e",
            BoundClass::Unknown => "#7f7f7f",
        }
    }

    pub const ALL: [BoundClass; 5] = [
        Self::MemoryBound,
        Self::ComputeBound,
        Self::Balanced,
        Self::LatencyBound,
        Self::Unknown,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Self::MemoryBound => "memory-bound",
            Self::ComputeBound => "compute-bound",
            Self::Balanced => "balanced",
            Self::LatencyBound => "latency-bound",
            Self::Unknown => "unknown",
        }
    }
}

/// A classification with the reason a reader needs to trust it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bound {
    pub class: BoundClass,
    /// Ridge point (FLOP/byte) of the roof used, when one was.
    pub ridge_intensity: Option<f64>,
    /// SM clock (MHz) of the compute roof behind the ridge, and where it came from.
    pub ridge_sm_clock_mhz: Option<f64>,
    pub ridge_sm_clock_source: Option<ClockSource>,
    /// DRAM clock (MHz) of the memory roof behind the ridge, and where it came from.
    pub ridge_dram_clock_mhz: Option<f64>,
    pub ridge_dram_clock_source: Option<ClockSource>,
    pub reason: String,
}

/// Classification thresholds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Thresholds {
    /// Both SM and DRAM throughput below this percent of peak → latency-bound. 60 % is the
    /// threshold of Nsight Compute's SOLBottleneck rule ("below 60.0% of peak typically indicate
    /// latency issues", rule text in the ncu SpeedOfLight section).
    pub low_util_pct: f64,
    /// Intensity within ×/÷ this factor of the ridge → balanced. √2 (half an octave): at ridge/√2
    /// the memory roof still allows 71 % of peak compute. A project choice, not an NVIDIA figure.
    pub balanced_factor: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            low_util_pct: 60.0,
            balanced_factor: std::f64::consts::SQRT_2,
        }
    }
}

/// Peak bandwidth and compute roofs by precision, with the clocks they are at.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Roofs {
    pub dram_bytes_per_s: f64,
    pub compute_flops_per_s: BTreeMap<Precision, f64>,
    /// SM clock of the FP32 roof and of the tensor roofs (equal unless at Hopper's rated clocks).
    pub sm_clock_mhz: f64,
    pub tensor_clock_mhz: f64,
    pub sm_clock_source: ClockSource,
    pub dram_clock_mhz: f64,
    pub dram_clock_source: ClockSource,
}

impl Roofs {
    /// Roofs for the precisions `Peaks` covers: fp32 (FFMA), tf32/fp16/bf16/fp8 tensor.
    pub fn from_peaks(p: &Peaks) -> Self {
        let mut compute = BTreeMap::new();
        compute.insert(Precision::Fp32, p.fp32_flops_per_s);
        compute.insert(Precision::TensorFp16, p.fp16_flops_per_s);
        for (prec, v) in [
            (Precision::TensorTf32, p.tf32_flops_per_s),
            (Precision::TensorBf16, p.bf16_flops_per_s),
            (Precision::TensorFp8, p.fp8_flops_per_s),
        ] {
            if let Some(v) = v {
                compute.insert(prec, v);
            }
        }
        Roofs {
            dram_bytes_per_s: p.dram_bytes_per_s,
            compute_flops_per_s: compute,
            sm_clock_mhz: p.sm_clock_mhz,
            tensor_clock_mhz: p.tensor_clock_mhz,
            sm_clock_source: p.sm_clock_source,
            dram_clock_mhz: p.dram_clock_mhz,
            dram_clock_source: p.dram_clock_source,
        }
    }

    /// Ridge point for `p` (fp32 when the kernel did no floating-point work).
    pub fn ridge(&self, p: Option<Precision>) -> Option<f64> {
        let peak = self
            .compute_flops_per_s
            .get(&p.unwrap_or(Precision::Fp32))?;
        Some(peak / self.dram_bytes_per_s)
    }

    /// SM clock of the compute roof for `p`.
    pub fn clock_mhz(&self, p: Option<Precision>) -> f64 {
        match p {
            Some(p) if p.is_tensor() => self.tensor_clock_mhz,
            _ => self.sm_clock_mhz,
        }
    }
}

fn side(ai: Option<f64>, ridge: Option<f64>) -> String {
    match (ai, ridge) {
        (Some(ai), Some(r)) if ai < r => {
            format!("; executed intensity {ai:.3} is below the ridge {r:.1} (memory side)")
        }
        (Some(ai), Some(r)) => {
            format!("; executed intensity {ai:.1} is above the ridge {r:.1} (compute side)")
        }
        _ => String::new(),
    }
}

/// Classifies `k` against `roofs` (the roofs at the kernel's clocks). Order: low utilisation
/// gate, then executed intensity vs ridge with a balanced band.
pub fn classify(k: &KernelPoint, roofs: Option<&Roofs>, t: &Thresholds) -> Bound {
    let prec_name = k.precision.map(Precision::name).unwrap_or("fp32");
    let ridge = roofs.and_then(|r| r.ridge(k.precision));
    let bound = |class: BoundClass, reason: String| {
        let r = roofs.filter(|_| ridge.is_some());
        Bound {
            class,
            ridge_intensity: ridge,
            ridge_sm_clock_mhz: r.map(|r| r.clock_mhz(k.precision)),
            ridge_sm_clock_source: r.map(|r| r.sm_clock_source),
            ridge_dram_clock_mhz: r.map(|r| r.dram_clock_mhz),
            ridge_dram_clock_source: r.map(|r| r.dram_clock_source),
            reason,
        }
    };
    if let (Some(sm), Some(dram)) = (k.sm_pct, k.dram_pct) {
        if sm < t.low_util_pct && dram < t.low_util_pct {
            return bound(
                BoundClass::LatencyBound,
                format!(
                    "SM {sm:.1} % and DRAM {dram:.1} % both below {:.0} % of peak{}",
                    t.low_util_pct,
                    side(k.executed_intensity, ridge)
                ),
            );
        }
    }
    let Some(ai) = k.executed_intensity else {
        let why = k
            .why_unknown
            .clone()
            .unwrap_or_else(|| "arithmetic intensity unknown".into());
        return bound(BoundClass::Unknown, why);
    };
    if roofs.is_none() {
        return bound(
            BoundClass::Unknown,
            "no GPU peaks: pass a GPU name or profile with device attributes".into(),
        );
    }
    let Some(ridge) = ridge else {
        return bound(
            BoundClass::Unknown,
            format!("no peak FLOP/s for {prec_name} on this GPU"),
        );
    };
    let (class, rel) = if ai < ridge / t.balanced_factor {
        (BoundClass::MemoryBound, "below")
    } else if ai > ridge * t.balanced_factor {
        (BoundClass::ComputeBound, "above")
    } else {
        (BoundClass::Balanced, "near")
    };
    bound(
        class,
        format!("executed intensity {ai:.3} FLOP/B {rel} the {prec_name} ridge {ridge:.1} FLOP/B"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::peaks::{derive, props_for_name};

    fn point(ai: Option<f64>, prec: Option<Precision>, sm: f64, dram: f64) -> KernelPoint {
        KernelPoint {
            name: "k".into(),
            stage: None,
            weight_ns: 1.0,
            duration_ns: Some(1.0),
            executed_flops: Some(1.0),
            executed_intensity: ai,
            dram_bytes: ai.map(|ai| 1.0 / ai),
            useful_flops: None,
            useful_op: None,
            modules: Vec::new(),
            useful_why_not: None,
            precision: prec,
            sm_pct: Some(sm),
            dram_pct: Some(dram),
            sm_clock_mhz: None,
            dram_clock_mhz: None,
            why_unknown: None,
        }
    }

    fn h200() -> Roofs {
        Roofs::from_peaks(&derive(&props_for_name("H200").expect("known")).expect("peaks"))
    }

    #[test]
    fn ridge_and_classes() {
        let roofs = h200();
        // bf16 ridge on H200 at its datasheet peaks: 989.4e12 / 4.8e12 ≈ 206 FLOP/B.
        let ridge = roofs.ridge(Some(Precision::TensorBf16)).expect("bf16 roof");
        assert!((ridge - 206.1).abs() < 1.0, "{ridge}");
        let t = Thresholds::default();
        let b = |ai| {
            classify(
                &point(Some(ai), Some(Precision::TensorBf16), 90.0, 90.0),
                Some(&roofs),
                &t,
            )
            .class
        };
        assert_eq!(b(1.0), BoundClass::MemoryBound);
        assert_eq!(b(ridge), BoundClass::Balanced);
        assert_eq!(b(ridge * 1.3), BoundClass::Balanced);
        assert_eq!(b(ridge * 1.5), BoundClass::ComputeBound);
        assert_eq!(b(ridge / 1.5), BoundClass::MemoryBound);
    }

    #[test]
    fn ridge_at_the_measured_clocks() {
        // tests/fixtures/stage2/ncu/h200/ncu_raw.csv launch 0: sm__cycles_elapsed.avg.per_second
        // 1.3359 GHz, dram__cycles_elapsed.avg.per_second 3.1994 GHz: the bf16 roof is
        // 132 × 4096 × 1335.9 MHz = 722.3 TFLOP/s, the DRAM roof 3199.4 MHz × 2 × 752 B =
        // 4.81 TB/s, the ridge 150 FLOP/B (222 at NVML's 1980 MHz).
        let peaks = derive(&props_for_name("H200").expect("known")).expect("peaks");
        let roofs = Roofs::from_peaks(&peaks.at_clocks(Some(1335.883), Some(3199.428)));
        let ridge = roofs.ridge(Some(Precision::TensorBf16)).expect("bf16 roof");
        assert!((ridge - 150.1).abs() < 0.2, "{ridge}");
        let mut k = point(Some(1.0), Some(Precision::TensorBf16), 90.0, 90.0);
        k.sm_clock_mhz = Some(1335.883);
        let b = classify(&k, Some(&roofs), &Thresholds::default());
        assert_eq!(b.ridge_sm_clock_mhz, Some(1335.883));
        assert_eq!(b.ridge_sm_clock_source, Some(ClockSource::Measured));
        assert_eq!(b.ridge_dram_clock_mhz, Some(3199.428));
        let rated = classify(&k, Some(&h200()), &Thresholds::default());
        assert_eq!(rated.ridge_sm_clock_mhz, Some(1830.0), "tensor roof clock");
        assert_eq!(rated.ridge_sm_clock_source, Some(ClockSource::SkuTable));
    }

    #[test]
    fn low_utilisation_gate_wins() {
        let roofs = h200();
        let bound = classify(
            &point(Some(1.0), Some(Precision::Fp32), 9.6, 20.5),
            Some(&roofs),
            &Thresholds::default(),
        );
        assert_eq!(bound.class, BoundClass::LatencyBound);
        assert!(bound.reason.contains("memory side"), "{}", bound.reason);
    }

    #[test]
    fn unknowns_carry_reasons() {
        let t = Thresholds::default();
        let mut p = point(None, None, 93.0, 17.0);
        p.why_unknown =
            Some("tensor pipe 93.3 % busy but no sm__ops_path_tensor_* counters collected".into());
        let b = classify(&p, Some(&h200()), &t);
        assert_eq!(b.class, BoundClass::Unknown);
        assert!(b.reason.contains("tensor pipe"));
        let b = classify(
            &point(Some(5.0), Some(Precision::Fp32), 90.0, 90.0),
            None,
            &t,
        );
        assert_eq!(b.class, BoundClass::Unknown);
        assert!(b.reason.contains("no GPU peaks"));
        let b = classify(
            &point(Some(5.0), Some(Precision::TensorFp64), 90.0, 90.0),
            Some(&h200()),
            &t,
        );
        assert_eq!(b.class, BoundClass::Unknown);
    }
}
