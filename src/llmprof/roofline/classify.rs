//! Classifies one kernel as memory-, compute-, latency-bound or balanced from its arithmetic
//! intensity, the ridge point of its dominant precision, and its SOL utilisation.

use std::collections::BTreeMap;

use serde::Serialize;

use super::precision::Precision;
use crate::measure::peaks::Peaks;

/// One kernel as the roofline sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelPoint {
    pub name: String,
    /// Stage (NVTX region) the kernel ran in, when known; plots group by it.
    pub stage: Option<String>,
    /// GPU time this kernel stands for in summaries (its duration, or an nsys total).
    pub weight_ns: f64,
    pub duration_ns: Option<f64>,
    pub flops: Option<f64>,
    /// FLOP per DRAM byte.
    pub intensity: Option<f64>,
    /// Dominant precision; `None` when the kernel did no floating-point work (copies, casts).
    pub precision: Option<Precision>,
    pub sm_pct: Option<f64>,
    pub dram_pct: Option<f64>,
    /// Why `intensity` is `None`, when it is.
    pub why_unknown: Option<String>,
}

impl KernelPoint {
    /// Achieved FLOP/s, when FLOPs and duration are known.
    pub fn flops_per_s(&self) -> Option<f64> {
        match (self.flops, self.duration_ns) {
            (Some(f), Some(ns)) if ns > 0.0 => Some(f / (ns * 1e-9)),
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

/// Peak bandwidth and compute roofs by precision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Roofs {
    pub dram_bytes_per_s: f64,
    pub compute_flops_per_s: BTreeMap<Precision, f64>,
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
        }
    }

    /// Ridge point for `p` (fp32 when the kernel did no floating-point work).
    pub fn ridge(&self, p: Option<Precision>) -> Option<f64> {
        let peak = self
            .compute_flops_per_s
            .get(&p.unwrap_or(Precision::Fp32))?;
        Some(peak / self.dram_bytes_per_s)
    }
}

fn side(ai: Option<f64>, ridge: Option<f64>) -> String {
    match (ai, ridge) {
        (Some(ai), Some(r)) if ai < r => {
            format!("; intensity {ai:.3} is below the ridge {r:.1} (memory side)")
        }
        (Some(ai), Some(r)) => {
            format!("; intensity {ai:.1} is above the ridge {r:.1} (compute side)")
        }
        _ => String::new(),
    }
}

/// Classifies `k`. Order: low utilisation gate, then intensity vs ridge with a balanced band.
pub fn classify(k: &KernelPoint, roofs: Option<&Roofs>, t: &Thresholds) -> Bound {
    let prec_name = k.precision.map(Precision::name).unwrap_or("fp32");
    let ridge = roofs.and_then(|r| r.ridge(k.precision));
    if let (Some(sm), Some(dram)) = (k.sm_pct, k.dram_pct) {
        if sm < t.low_util_pct && dram < t.low_util_pct {
            return Bound {
                class: BoundClass::LatencyBound,
                ridge_intensity: ridge,
                reason: format!(
                    "SM {sm:.1} % and DRAM {dram:.1} % both below {:.0} % of peak{}",
                    t.low_util_pct,
                    side(k.intensity, ridge)
                ),
            };
        }
    }
    let Some(ai) = k.intensity else {
        let why = k
            .why_unknown
            .clone()
            .unwrap_or_else(|| "arithmetic intensity unknown".into());
        return Bound {
            class: BoundClass::Unknown,
            ridge_intensity: ridge,
            reason: why,
        };
    };
    if roofs.is_none() {
        return Bound {
            class: BoundClass::Unknown,
            ridge_intensity: None,
            reason: "no GPU peaks: pass a GPU name or profile with device attributes".into(),
        };
    }
    let Some(ridge) = ridge else {
        return Bound {
            class: BoundClass::Unknown,
            ridge_intensity: None,
            reason: format!("no peak FLOP/s for {prec_name} on this GPU"),
        };
    };
    let (class, rel) = if ai < ridge / t.balanced_factor {
        (BoundClass::MemoryBound, "below")
    } else if ai > ridge * t.balanced_factor {
        (BoundClass::ComputeBound, "above")
    } else {
        (BoundClass::Balanced, "near")
    };
    Bound {
        class,
        ridge_intensity: Some(ridge),
        reason: format!("intensity {ai:.3} FLOP/B {rel} the {prec_name} ridge {ridge:.1} FLOP/B"),
    }
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
            flops: Some(1.0),
            intensity: ai,
            precision: prec,
            sm_pct: Some(sm),
            dram_pct: Some(dram),
            why_unknown: None,
        }
    }

    fn h200() -> Roofs {
        Roofs::from_peaks(&derive(&props_for_name("H200").expect("known")).expect("peaks"))
    }

    #[test]
    fn ridge_and_classes() {
        let roofs = h200();
        // bf16 ridge on H200 at 1980 MHz: 1070.5e12 / 4.816e12 ≈ 222 FLOP/B.
        let ridge = roofs.ridge(Some(Precision::TensorBf16)).expect("bf16 roof");
        assert!((ridge - 222.3).abs() < 1.0, "{ridge}");
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
